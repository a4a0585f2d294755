// Python binding of the RMSNorm launchers (built by kernels/rms_norm_kernel.py through torch.utils.cpp_extension).
// Python's C API alone: the tensors' checks, their data pointers and the current CUDA stream come from
// rms_norm_kernel.py, so this file includes no torch header. torch/csrc/utils/pybind.h (a function of tensors)
// made this the build's slowest file: 8.4 s of a C++ compiler's time against 0.4 s now (docs/compiled-kernels.md),
// the whole of a cold gate's wait for the build.
#include <Python.h>
#include "rms_norm_launch.h"

#define PERFGATE_CAT(a, b) a##b
#define PERFGATE_INIT(name) PERFGATE_CAT(PyInit_, name)
#define PERFGATE_STR(name) #name
#define PERFGATE_NAME(name) PERFGATE_STR(name)

namespace {

// rms_norm(dtype, x, w, y, rows, cols, eps, threads, stream): y = rms_norm(x) * w; the pointers are device
// addresses, dtype 0/1/2 = fp32/fp16/bf16 (RmsDtype), stream a cudaStream_t as an integer.
PyObject* rms_norm(PyObject*, PyObject* args) {
  int dtype = 0, threads = 0;
  unsigned long long x = 0, w = 0, y = 0, stream = 0;
  long long rows = 0, cols = 0;
  float eps = 0.0f;
  if (!PyArg_ParseTuple(args, "iKKKLLfiK", &dtype, &x, &w, &y, &rows, &cols, &eps, &threads, &stream)) {
    return nullptr;
  }
  if (dtype < 0 || dtype > 2 || threads < 32 || threads > 1024 || threads % 32 != 0) {
    PyErr_SetString(PyExc_ValueError, "rms_norm: dtype must be 0-2, threads a multiple of 32 in [32, 1024]");
    return nullptr;
  }
  const cudaError_t err = perfgate_kernels::launch_rms_norm(
      static_cast<perfgate_kernels::RmsDtype>(dtype), reinterpret_cast<const void*>(x),
      reinterpret_cast<const void*>(w), reinterpret_cast<void*>(y), rows, cols, eps, threads,
      reinterpret_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    PyErr_Format(PyExc_RuntimeError, "rms_norm: launch failed: %s", cudaGetErrorString(err));
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"rms_norm", rms_norm, METH_VARARGS, "RMSNorm over the last dimension (device pointers, see rms_norm.cpp)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, PERFGATE_NAME(TORCH_EXTENSION_NAME), nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PERFGATE_INIT(TORCH_EXTENSION_NAME)() { return PyModule_Create(&module); }
