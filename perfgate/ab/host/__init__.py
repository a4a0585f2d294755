"""The shared A/B host: base, head and the A/A twin as pytest sessions in threads of one process, so what
makes one process of the same code steadily faster or slower than another (the 12 us add's 1-3% on the
H100, docs/evidence/ab-noise.md) is common to both sides and cancels in the ratio. Deny by default: what the
baton does not carry from one side to the next is fingerprinted at every hand-over, and a side that changes
it ends the shared comparison; the run is then measured in a process per tree, and says why.

    sharing.py      whether to share (neither tree holds native code, or the user asked); what to preload
    process.py      the host process: preload, the contract set up, a thread per side, the end of sharing
    baton.py        the baton: who runs, what goes with it (SideState), the contract (Contract)
    handover.py     the process-wide state handed over, found by introspection (Registry)
    fingerprint.py  the process-wide state that must not change, found by introspection
    environ.py      each side's environment without rewriting the process's

What is isolated, and how:

- handed over with the baton (baton.py, handover.py): the tree's modules (sys.modules), sys.path, the
  working directory, stdout/stderr; warning filters, the logging manager, sys.meta_path / path_hooks /
  path_importer_cache (each session's assertion rewriter its own), the exception and display hooks; torch's
  every `torch._C._get_X`/`_set_X` flag and every getter/setter pair
  and settable property of torch.backends (SDPA kernels, cuDNN, TF32, preferred BLAS/linalg), found by
  introspection, its default dtype, deterministic algorithms, intra-op threads;
- redirected and proved (ab/imports.py, ab/provenance.py): path entries and editable-install import hooks
  into the checkout point to the side's tree; what each side ran is recorded and judged;
- the environment (environ.py): each side's Python view, refilled in place, never putenv/unsetenv at a
  hand-over; a side's write of a key it does not own reaches the C environment and ends the sharing;
- per thread already (each side is a thread): torch's default device, grad/autocast and torch-function
  modes, cuDNN/cuBLAS handles and cuDNN's plan cache, torch's config modules (context variables);
- fingerprinted, a change ends the sharing and is named (fingerprint.py): signal handlers, Python threads
  left running, atexit callbacks from a tree's code, the interpreter's switches (switch interval, recursion
  limit, gc, dlopen flags, trace/profile hooks, fault handler, locale), torch flags without a setter,
  inter-op threads, the CUDA allocator's backend and settings, torch config modules held as globals;
- ends the sharing (ab/serve.py): a timed round that waited on the CUDA caching allocator every side shares
  (cudaMalloc / cudaFree / a retry inside the events);
- never shared (sharing.py): a tree's native code, whose two copies would clash in one process's registries
  (`ab_process = "auto"` runs a process per tree).

Shared by design: what is installed (torch, Triton, pytest, perfgate; imported by the host before any side
when a tree imports torch or Triton, so their import-time state is every side's), the CUDA context and its
caching allocator, the host process's place on the machine. Not seen: a change to an installed module's
globals other than those above (a monkeypatched torch function, a Triton global), fd-level output
(`capfd`, C-level prints: the process's), and what a side's native code does outside Python's view.
"""
