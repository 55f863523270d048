// The same model, loss, optimizer and batch in libtorch (Debian's
// libtorch-dev), for bench/run_train.sh: "RESULT torch <threads> <images/s>".
//   torch_mnist_bench --threads N [--steps N]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

struct Net : torch::nn::Module {
  Net()
      : conv1(register_module(
            "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)))),
        conv2(register_module(
            "conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)))),
        fc1(register_module("fc1", torch::nn::Linear(9216, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv1->forward(x));
    x = torch::relu(conv2->forward(x));
    x = torch::max_pool2d(x, 2);
    x = torch::dropout(x, 0.25, is_training());
    x = torch::relu(fc1->forward(x.flatten(1)));
    x = torch::dropout(x, 0.5, is_training());
    return torch::log_softmax(fc2->forward(x), 1);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};

int main(int argc, char** argv) {
  int threads = 1, steps = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
  }
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  Net net;
  // libtorch at its best on the CPU: convolutions in channels-last layout
  // (oneDNN's preferred one; 10-25 % faster than the default here).
  std::vector<torch::Tensor> params = net.parameters(), ag, av;
  for (auto& p : params) {
    if (p.dim() == 4) {
      p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  // libtorch's C++ API has no Adadelta: the same update in tensor ops.
  for (auto& p : params) {
    ag.push_back(torch::zeros_like(p));
    av.push_back(torch::zeros_like(p));
  }
  const double rho = 0.95, eps = 1e-7, lr = 1.0;
  const int batch = 128;
  auto x = torch::rand({batch, 1, 28, 28})
               .contiguous(torch::MemoryFormat::ChannelsLast);
  auto y = torch::randint(0, 10, {batch}, torch::kLong);
  auto step = [&] {
    for (auto& p : params) {
      if (p.grad().defined()) p.grad().zero_();
    }
    auto loss = torch::nll_loss(net.forward(x), y);
    loss.backward();
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < params.size(); ++k) {
      auto g = params[k].grad();
      ag[k].mul_(rho).addcmul_(g, g, 1 - rho);
      auto update = (av[k] + eps).sqrt_().div_((ag[k] + eps).sqrt_()).mul_(g);
      params[k].add_(update, -lr);
      av[k].mul_(rho).addcmul_(update, update, 1 - rho);
    }
  };
  for (int s = 0; s < 3; ++s) step();
  auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step();
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("RESULT torch %d %.1f\n", threads, steps * batch / secs);
  return 0;
}
