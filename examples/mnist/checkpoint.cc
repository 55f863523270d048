#include "mnist/checkpoint.h"

#include <cstdio>
#include <map>

#include "mnist/numbers.h"
#include "mnist/safetensors.h"

namespace hvd::mnist {

std::vector<std::pair<std::string, std::vector<float>*>> StateBuffers(
    Model& model, Adadelta& opt) {
  std::vector<std::pair<std::string, std::vector<float>*>> out;
  for (Param& p : model.params()) out.push_back({p.name, &p.value});
  for (const Adadelta::Slot& s : opt.slots()) out.push_back({s.name, s.data});
  return out;
}

Status SaveCheckpoint(const std::string& path, Model& model, Adadelta& opt,
                      int epoch, double lr, const Metrics& m,
                      const std::string& mode, const InputScaling& scaling) {
  Checkpoint ckpt;
  for (const Param& p : model.params()) {
    ckpt.tensors.push_back({p.name, p.dims, p.value});
  }
  for (const Adadelta::Slot& s : opt.slots()) {
    ckpt.tensors.push_back(
        {s.name, {static_cast<int64_t>(s.data->size())}, *s.data});
  }
  char buf[32];
  auto num = [&](double v) {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return std::string(buf);
  };
  ckpt.metadata = {{"format", "hvd-mnist-1"},
                   {"mode", mode},
                   {"epoch", std::to_string(epoch)},
                   {"lr", num(lr)},
                   {"loss", num(m.loss)},
                   {"accuracy", num(m.accuracy)},
                   {"val_loss", num(m.val_loss)},
                   {"val_accuracy", num(m.val_accuracy)},
                   {"input_mean", num(scaling.mean)},
                   {"input_std", num(scaling.std)}};
  return WriteSafetensors(path, ckpt);
}

StatusOr<Resumed> Resume(const std::string& path, Model& model, Adadelta& opt) {
  HVD_ASSIGN_OR_RETURN(Checkpoint ckpt, ReadSafetensors(path));
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : ckpt.tensors) by_name[t.name] = &t;
  for (auto& [name, buf] : StateBuffers(model, opt)) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return Status::DataLoss(path, "has no tensor '" + name +
                                        "' (not a checkpoint of this model)");
    }
    if (it->second->data.size() != buf->size()) {
      return Status::DataLoss(
          path, "tensor '" + name + "' has " +
                    std::to_string(it->second->data.size()) +
                    " elements, the model " + std::to_string(buf->size()));
    }
    *buf = it->second->data;
  }
  HVD_ASSIGN_OR_RETURN(int64_t epoch,
                       ParseNumber<int64_t>(ckpt.metadata["epoch"],
                                            path + " epoch", 0, 1 << 20));
  HVD_ASSIGN_OR_RETURN(
      double lr, ParseNumber(ckpt.metadata["lr"], path + " lr", 0.0, 1e9));
  Resumed out{static_cast<int>(epoch), lr, {}};
  if (ckpt.metadata.count("input_mean") || ckpt.metadata.count("input_std")) {
    HVD_ASSIGN_OR_RETURN(out.scaling.mean,
                         ParseNumber(ckpt.metadata["input_mean"],
                                     path + " input_mean", -1e6, 1e6));
    HVD_ASSIGN_OR_RETURN(out.scaling.std,
                         ParseNumber(ckpt.metadata["input_std"],
                                     path + " input_std", 1e-6, 1e6));
  }
  return out;
}

}  // namespace hvd::mnist
