"""perfgate: a performance gate for GPU kernels.

Importing perfgate does nothing costly: no torch, no GPU, no subprocess. The pytest plugin is
`perfgate.plugin`; the library layers are measure -> parse -> stats -> store -> compare -> report.
"""

__version__ = "0.1.0"
