"""The compiled kernels of every case: what each kernel a case launches is (registers, spills, shared memory,
launch, theoretical occupancy, a hash of its SASS), read without a profiler; the static gate compares them
(gate/static.py) and A/B mode skips a case whose code did not change (same_code.py). docs/compiled-kernels.md.
"""
