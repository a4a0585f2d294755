"""The shared A/B host: base, head and the A/A twin as pytest sessions in one process (docs/ab.md).

sharing.py        whether to share: neither tree holds native code (or the user asked)
shared.py         the host process: a thread per side, the baton and what goes with it
process_state.py  the process-wide settings handed over with the baton
"""
