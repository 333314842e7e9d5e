// ef.dist: collectives on Open MPI and the data-parallel strategy (eagerflow/dist/*.h), for
// `mpirun -np 2 python train.py`. Model.set_distribution joins the Model class here.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>

#include "bindings.h"

namespace efpy {
namespace {

ef::dist::ReduceOp reduce_op(const std::string& op) {
  if (op == "sum") return ef::dist::ReduceOp::sum;
  if (op == "mean") return ef::dist::ReduceOp::mean;
  if (op == "max") return ef::dist::ReduceOp::max;
  if (op == "min") return ef::dist::ReduceOp::min;
  ef::fail("all_reduce", "op must be 'sum', 'mean', 'max' or 'min', got '" + op + "'");
}

}  // namespace

void init_dist(nb::module_& m) {
  nb::module_ d = m.def_submodule("dist", "Collectives across the processes of an MPI job, and data parallelism (eagerflow/dist)");
  d.def("available", &ef::dist::available, "Whether this build has MPI.");
  d.def("init", &ef::dist::init, "Starts MPI if nobody has (idempotent); MPI_Finalize runs at exit.");
  d.def("is_initialized", &ef::dist::is_initialized);
  d.def("rank", &ef::dist::rank);
  d.def("world_size", &ef::dist::world_size);
  d.def("barrier", [] {
    nb::gil_scoped_release release;
    ef::dist::barrier();
  });
  d.def("is_file_writer", &ef::dist::is_file_writer);
  d.def("use_shared_memory", &ef::dist::use_shared_memory, nb::arg("on"),
        "Reductions on one machine through an MPI-3 shared-memory window (True, the default) or MPI_Allreduce "
        "(False); every rank must choose the same.");
  d.def("shared_memory", &ef::dist::shared_memory, "Whether reductions go through the shared-memory window now.");
  d.def(
      "all_reduce",
      [](nb::handle x, const std::string& op) {
        ef::Tensor t = to_tensor(x);
        ef::dist::ReduceOp k = reduce_op(op);
        nb::gil_scoped_release release;
        return ef::dist::all_reduce(t, k);
      },
      nb::arg("x"), nb::arg("op") = "sum");
  d.def(
      "broadcast",
      [](nb::handle x, int root) {
        ef::Tensor t = to_tensor(x);
        nb::gil_scoped_release release;
        return ef::dist::broadcast(t, root);
      },
      nb::arg("x"), nb::arg("root") = 0);
  d.def(
      "all_gather",
      [](nb::handle x, int axis) {
        ef::Tensor t = to_tensor(x);
        nb::gil_scoped_release release;
        return ef::dist::all_gather(t, axis);
      },
      nb::arg("x"), nb::arg("axis") = 0);
  d.def(
      "reduce_scatter",
      [](nb::handle x, int axis) {
        ef::Tensor t = to_tensor(x);
        nb::gil_scoped_release release;
        return ef::dist::reduce_scatter(t, axis);
      },
      nb::arg("x"), nb::arg("axis") = 0);
  d.def(
      "all_gather_rows",
      [](nb::handle x) {
        ef::Tensor t = to_tensor(x);
        nb::gil_scoped_release release;
        return ef::dist::all_gather_rows(t);
      },
      nb::arg("x"));
  d.def("abort_job", [](int code) { ef::dist::abort_job(code); }, nb::arg("code") = 1);

  nb::class_<ef::dist::Strategy>(d, "Strategy")
      .def_prop_ro("rank", &ef::dist::Strategy::rank)
      .def_prop_ro("world_size", &ef::dist::Strategy::world_size)
      .def_prop_ro("is_root", &ef::dist::Strategy::is_root)
      .def("local_rows", &ef::dist::Strategy::local_rows, nb::arg("begin"), nb::arg("end"));
  nb::class_<ef::dist::DataParallel, ef::dist::Strategy>(d, "DataParallel")
      .def(
          "__init__",
          [](ef::dist::DataParallel* self, std::int64_t bucket_bytes, bool abort_on_error, bool average_non_trainable) {
            ef::dist::DataParallelOptions o;
            o.bucket_bytes = bucket_bytes;
            o.abort_on_error = abort_on_error;
            o.average_non_trainable = average_non_trainable;
            new (self) ef::dist::DataParallel(o);
          },
          nb::arg("bucket_bytes") = ef::dist::DataParallelOptions{}.bucket_bytes, nb::arg("abort_on_error") = true,
          nb::arg("average_non_trainable") = true)
      .def_prop_ro("bucket_bytes", [](const ef::dist::DataParallel& s) { return s.options().bucket_bytes; })
      .def(
          "average_gradients",
          [](ef::dist::DataParallel& s, const std::vector<std::optional<ef::Tensor>>& grads) {
            std::vector<ef::Tensor> g;
            for (const auto& t : grads) g.push_back(t ? *t : ef::Tensor());
            std::vector<ef::Tensor> out;
            {
              nb::gil_scoped_release release;
              out = s.average_gradients(g);
            }
            nb::list result;
            for (const auto& t : out) result.append(t.defined() ? nb::cast(t) : nb::none());
            return result;
          },
          nb::arg("gradients"))
      .def(
          "broadcast_variables",
          [](ef::dist::DataParallel& s, const std::vector<ef::Variable>& vars, int root) {
            nb::gil_scoped_release release;
            s.broadcast_variables(vars, root);
          },
          nb::arg("variables"), nb::arg("root") = 0)
      .def(
          "broadcast_model", [](ef::dist::DataParallel& s, ef::train::Model& model, int root) { s.broadcast_model(model, root); },
          nb::arg("model"), nb::arg("root") = 0);

  nb::class_<ef::dist::DistributedOptimizer>(d, "DistributedOptimizer")
      .def(nb::init<std::shared_ptr<ef::optim::Optimizer>, std::shared_ptr<ef::dist::DataParallel>>(), nb::arg("optimizer"),
           nb::arg("strategy").none() = nb::none())
      .def_prop_ro("optimizer", &ef::dist::DistributedOptimizer::optimizer)
      .def_prop_ro("strategy", &ef::dist::DistributedOptimizer::strategy)
      .def(
          "apply_gradients",
          [](ef::dist::DistributedOptimizer& o, nb::handle grads_and_vars) {
            std::vector<ef::Tensor> g;
            std::vector<ef::Variable> v;
            for (nb::handle pair : grads_and_vars) {
              nb::object gi = pair[0];
              g.push_back(gi.is_none() ? ef::Tensor() : to_tensor(gi));
              v.push_back(nb::cast<ef::Variable>(pair[1]));
            }
            nb::gil_scoped_release release;
            o.apply_gradients(g, v);
          },
          nb::arg("grads_and_vars"), "As Optimizer.apply_gradients(zip(grads, vars)), averaging the gradients across ranks first.");

  // Model.set_distribution(strategy or None) / Model.distribution.
  nb::handle model = nb::type<ef::train::Model>();
  model.attr("set_distribution") = nb::cpp_function(
      [](ef::train::Model& m, std::shared_ptr<ef::dist::Strategy> s) { m.set_distribution(std::move(s)); }, nb::is_method(),
      nb::arg("strategy").none());
  model.attr("distribution") = nb::cpp_function([](const ef::train::Model& m) { return m.distribution(); }, nb::is_method());
}

}  // namespace efpy
