// hvd._core: the C++ API of libhvd for Python, on raw memory. The Python
// modules (hvd.torch) turn framework tensors into (address, dtype, shape,
// device) and back; nothing here knows torch, so the extension builds
// without its headers and loads in any interpreter of the same ABI.
//
// The GIL is released while libhvd works (submitting and waiting); libhvd
// never calls back into Python, so no engine thread ever needs it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hvd/elastic.h"
#include "hvd/hvd.h"

namespace py = pybind11;

namespace {

// Raised for a collective that fails (hvd.common.exceptions sets the class
// the Python side sees; this is its base until then).
PyObject* g_internal_error = PyExc_RuntimeError;

// Errors of calls that are not collectives: the caller's arguments (and,
// with `state_is_argument`, calling at the wrong time) are ValueError.
void Check(const hvd::Status& s, bool state_is_argument = false) {
  if (s.code() == hvd::StatusCode::kInvalidArgument ||
      (state_is_argument && s.code() == hvd::StatusCode::kFailedPrecondition)) {
    throw py::value_error(s.ToString());
  }
  if (!s.ok()) {
    PyErr_SetString(g_internal_error, s.ToString().c_str());
    throw py::error_already_set();
  }
}

// An output's memory: libhvd's allocation callback makes it (uninitialised,
// on the engine thread, without the GIL) and writes the result into it;
// Python then views it with torch.frombuffer, without a copy.
struct Bytes {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
};

// Memory from hvd::alloc_shared, freed when the last view of it goes
// (torch.frombuffer keeps this object alive with its tensor).
class SharedBuffer {
 public:
  explicit SharedBuffer(size_t bytes) : size_(bytes) {
    hvd::StatusOr<void*> p = hvd::alloc_shared(bytes);
    if (!p.ok()) throw std::bad_alloc();
    data_ = *p;
  }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer() { (void)hvd::free_shared(data_); }
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_;
};

// One submitted operation: libhvd's handle, and the output it fills.
class Op {
 public:
  explicit Op(bool has_output)
      : output_(has_output ? std::make_unique<hvd::Output>() : nullptr) {
    if (!output_) return;
    bytes_ = std::make_shared<Bytes>();
    output_->allocate = [bytes = bytes_](size_t n,
                                         const std::vector<int64_t>&) {
      bytes->data.reset(new (std::nothrow) uint8_t[n > 0 ? n : 1]);
      bytes->size = bytes->data ? n : 0;
      return static_cast<void*>(bytes->data.get());
    };
  }

  hvd::Output* output() { return output_.get(); }
  void set(hvd::Handle h) { handle_ = std::move(h); }

  bool poll() const { return handle_.poll(); }

  // Waits; raises the operation's error as HorovodInternalError.
  void wait() const {
    hvd::Status s;
    {
      py::gil_scoped_release release;
      s = handle_.wait();
    }
    if (!s.ok()) {
      PyErr_SetString(g_internal_error, s.ToString().c_str());
      throw py::error_already_set();
    }
  }

  // A refusal at submission (bad arguments, not initialised) as
  // ValueError, at once.
  void Submitted() const {
    if (handle_.refused()) throw py::value_error(handle_.wait().ToString());
  }

  int64_t value() const { return handle_.value(); }

  // The output's bytes and shape.
  py::tuple take_output() {
    if (!output_) throw py::value_error("this operation has no output");
    return py::make_tuple(py::cast(bytes_), py::cast(output_->shape));
  }

  std::vector<int64_t> received_splits() const {
    return output_ ? output_->received_splits : std::vector<int64_t>{};
  }

 private:
  hvd::Handle handle_;
  std::unique_ptr<hvd::Output> output_;
  std::shared_ptr<Bytes> bytes_;
};

hvd::Tensor MakeTensor(uintptr_t data, hvd::DataType dtype,
                       std::vector<int64_t> shape, int device) {
  return hvd::Tensor{reinterpret_cast<void*>(data), dtype, std::move(shape),
                     device};
}

// Files whose frames are not the user's (hvd's own package, torch's):
// the submission site is the innermost frame outside them.
std::vector<std::string> g_library_dirs;

// "train.py:88 in step": the user's frame that submits (the GIL held).
// Cheap: a walk of a few frames, no Python call.
std::string UserSite() {
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  std::string site;
  for (int depth = 0; f != nullptr && depth < 64 && site.empty(); ++depth) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    bool library = file == nullptr;
    for (const std::string& dir : g_library_dirs) {
      library = library || std::string_view(file).rfind(dir, 0) == 0;
    }
    if (!library) {
      const std::string_view path(file);
      const char* name = PyUnicode_AsUTF8(code->co_name);
      site = std::string(path.substr(path.rfind('/') + 1)) + ":" +
             std::to_string(PyFrame_GetLineNumber(f)) + " in " +
             (name ? name : "?");
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyErr_Clear();  // a name that is not UTF-8 is no error of the call
  return site;
}

template <typename Submit>
std::shared_ptr<Op> Start(bool has_output, Submit&& submit) {
  auto op = std::make_shared<Op>(has_output);
  hvd::set_submission_site(UserSite());
  {
    py::gil_scoped_release release;
    op->set(submit(op->output()));
  }
  op->Submitted();
  return op;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "libhvd's C++ API on raw memory (used by hvd.torch)";

  // libhvd's enums, by name: the Python package maps torch's dtypes and
  // Horovod's op constants onto these and copies no numbers. A type or op
  // added to hvd.h needs its name here.
  static_assert(static_cast<int>(hvd::DataType::kInt16) == 8);
  static_assert(static_cast<int>(hvd::ReduceOp::kAdasum) == 5);
  py::enum_<hvd::DataType>(m, "DataType")
      .value("uint8", hvd::DataType::kUInt8)
      .value("int8", hvd::DataType::kInt8)
      .value("int16", hvd::DataType::kInt16)
      .value("int32", hvd::DataType::kInt32)
      .value("int64", hvd::DataType::kInt64)
      .value("float16", hvd::DataType::kFloat16)
      .value("bfloat16", hvd::DataType::kBFloat16)
      .value("float32", hvd::DataType::kFloat32)
      .value("float64", hvd::DataType::kFloat64);
  py::enum_<hvd::ReduceOp>(m, "ReduceOp")
      .value("Average", hvd::ReduceOp::kAverage)
      .value("Sum", hvd::ReduceOp::kSum)
      .value("Min", hvd::ReduceOp::kMin)
      .value("Max", hvd::ReduceOp::kMax)
      .value("Product", hvd::ReduceOp::kProduct)
      .value("Adasum", hvd::ReduceOp::kAdasum);

  m.def("add_library_dir",
        [](const std::string& dir) { g_library_dirs.push_back(dir); });
  m.def("set_stack_dump", &hvd::set_stack_dump);
  m.def("set_internal_error", [](py::object cls) {
    // Kept alive by the module that defines it (hvd.common.exceptions).
    g_internal_error = cls.ptr();
  });

  m.def(
      "init",
      [](const std::vector<std::vector<int>>& process_sets, bool dynamic) {
        hvd::Status s;
        {
          py::gil_scoped_release release;
          s = hvd::init(process_sets, dynamic);
        }
        Check(s);
      },
      py::arg("process_sets") = std::vector<std::vector<int>>{},
      py::arg("dynamic") = false);
  m.def("add_process_set", [](const std::vector<int>& ranks) {
    hvd::StatusOr<int> id = [&] {
      py::gil_scoped_release release;
      return hvd::add_process_set(ranks);
    }();
    Check(id.status(), true);
    return *id;
  });
  m.def("remove_process_set", [](int id) {
    hvd::Status s;
    {
      py::gil_scoped_release release;
      s = hvd::remove_process_set(id);
    }
    Check(s, true);
  });
  m.def("hosts_changed", [] {
    py::gil_scoped_release release;
    return hvd::elastic::hosts_changed();
  });
  // The launcher's host updates: FailedPrecondition (no job: a reset) is
  // ValueError, so the listener can tell it from the rendezvous's errors.
  m.def("host_updates_announced", [] {
    hvd::StatusOr<int> n = [] {
      py::gil_scoped_release release;
      return hvd::elastic::host_updates_announced();
    }();
    Check(n.status(), true);
    return *n;
  });
  m.def("wait_host_update", [](int n, int wait_ms) -> py::object {
    auto got = [&] {
      py::gil_scoped_release release;
      return hvd::elastic::wait_host_update(
          n, std::chrono::milliseconds(wait_ms));
    }();
    Check(got.status(), true);
    if (!*got) return py::none();
    return py::make_tuple((*got)->timestamp, static_cast<int>((*got)->result));
  });
  m.def("process_set_ids", &hvd::process_set_ids);
  m.def("process_set_ranks", &hvd::process_set_ranks);
  m.def("process_set_rank", &hvd::process_set_rank);
  m.def("process_set_size", &hvd::process_set_size);
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    (void)hvd::shutdown();
  });
  m.def("is_initialized", &hvd::is_initialized);
  m.def("rank", &hvd::rank);
  m.def("size", &hvd::size);
  m.def("local_rank", &hvd::local_rank);
  m.def("local_size", &hvd::local_size);
  m.def("cross_rank", &hvd::cross_rank);
  m.def("cross_size", &hvd::cross_size);
  m.def("gpu", &hvd::gpu);
  // NCCL_VERSION_CODE, 0 without NCCL (Horovod's nccl_built()).
  m.attr("nccl_built") = hvd::nccl_built();

  m.def("mark_step", [] { hvd::mark_step(); });
  m.def("start_timeline", [](const std::string& path, bool mark_cycles) {
    Check(hvd::start_timeline(path, mark_cycles), true);
  });
  m.def("stop_timeline", [] { Check(hvd::stop_timeline(), true); });

  py::class_<Bytes, std::shared_ptr<Bytes>>(m, "Bytes", py::buffer_protocol())
      .def_buffer([](Bytes& b) {
        return py::buffer_info(b.data.get(), 1,
                               py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size)}, {1});
      })
      .def("__len__", [](const Bytes& b) { return b.size; });

  py::class_<SharedBuffer, std::shared_ptr<SharedBuffer>>(m, "SharedBuffer",
                                                          py::buffer_protocol())
      .def(py::init<size_t>())
      .def_buffer([](SharedBuffer& b) {
        return py::buffer_info(b.data(), 1,
                               py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {1});
      })
      .def("__len__", &SharedBuffer::size);

  py::class_<Op, std::shared_ptr<Op>>(m, "Op")
      .def("poll", &Op::poll)
      .def("wait", &Op::wait)
      .def("value", &Op::value)
      .def("take_output", &Op::take_output)
      .def("received_splits", &Op::received_splits);

  // Every operation takes the process set last (0: the whole job).
  m.def("allreduce",
        [](const std::string& name, uintptr_t data, hvd::DataType dtype,
           std::vector<int64_t> shape, int device, hvd::ReduceOp op,
           double prescale, double postscale, int process_set) {
          hvd::Tensor t = MakeTensor(data, dtype, std::move(shape), device);
          return Start(false, [&](hvd::Output*) {
            return hvd::allreduce_async(name, t, op, prescale, postscale,
                                        process_set);
          });
        });
  m.def("grouped_allreduce",
        [](const std::string& name, const std::vector<uintptr_t>& data,
           hvd::DataType dtype, const std::vector<std::vector<int64_t>>& shapes,
           int device, hvd::ReduceOp op, double prescale, double postscale,
           int process_set) {
          if (data.size() != shapes.size()) {
            throw py::value_error("grouped_allreduce: one shape per tensor");
          }
          std::vector<hvd::Tensor> tensors;
          for (size_t i = 0; i < data.size(); ++i) {
            tensors.push_back(MakeTensor(data[i], dtype, shapes[i], device));
          }
          std::vector<hvd::Handle> handles;
          hvd::set_submission_site(UserSite());
          {
            py::gil_scoped_release release;
            handles = hvd::grouped_allreduce_async(name, tensors, op, prescale,
                                                   postscale, process_set);
          }
          std::vector<std::shared_ptr<Op>> ops;
          for (hvd::Handle& h : handles) {
            auto one = std::make_shared<Op>(false);
            one->set(std::move(h));
            one->Submitted();
            ops.push_back(std::move(one));
          }
          return ops;
        });
  m.def("allgather",
        [](const std::string& name, uintptr_t data, hvd::DataType dtype,
           std::vector<int64_t> shape, int device, int process_set) {
          hvd::Tensor t = MakeTensor(data, dtype, std::move(shape), device);
          return Start(true, [&](hvd::Output* out) {
            return hvd::allgather_async(name, t, out, process_set);
          });
        });
  m.def("broadcast",
        [](const std::string& name, uintptr_t data, hvd::DataType dtype,
           std::vector<int64_t> shape, int device, int root, int process_set) {
          hvd::Tensor t = MakeTensor(data, dtype, std::move(shape), device);
          return Start(false, [&](hvd::Output*) {
            return hvd::broadcast_async(name, t, root, process_set);
          });
        });
  m.def("alltoall",
        [](const std::string& name, uintptr_t data, hvd::DataType dtype,
           std::vector<int64_t> shape, int device,
           const std::vector<int64_t>& splits, int process_set) {
          hvd::Tensor t = MakeTensor(data, dtype, std::move(shape), device);
          return Start(true, [&](hvd::Output* out) {
            return hvd::alltoall_async(name, t, splits, out, process_set);
          });
        });
  m.def("reducescatter",
        [](const std::string& name, uintptr_t data, hvd::DataType dtype,
           std::vector<int64_t> shape, int device, hvd::ReduceOp op,
           double prescale, double postscale, int process_set) {
          hvd::Tensor t = MakeTensor(data, dtype, std::move(shape), device);
          return Start(true, [&](hvd::Output* out) {
            return hvd::reducescatter_async(name, t, out, op, prescale,
                                            postscale, process_set);
          });
        });
  m.def("barrier", [](const std::string& name, int process_set) {
    return Start(false, [&](hvd::Output*) {
      return hvd::barrier_async(name, process_set);
    });
  });
  m.def("join", [] {
    return Start(false, [&](hvd::Output*) { return hvd::join_async(); });
  });
}
