// train_mnist under horovodrun -np 2, short runs: both modes must beat an
// accuracy bound, and every file they write is read back by the test's own
// parsers (safetensors header and data, the CSV log); --resume continues a
// run; bad flags and data are one-line errors.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

using std::chrono::seconds;
constexpr auto kTimeout = std::chrono::milliseconds(400000);

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

double TestAccuracy(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(
          out, m, std::regex(R"(\[0\]<stdout>:Test accuracy: ([0-9.]+))"))) {
    return -1;
  }
  return std::stod(m[1]);
}

// The header of a safetensors file, checked against the model's layers.
nlohmann::json SafetensorsHeader(const std::string& path) {
  std::string bytes = Slurp(path);
  EXPECT_GE(bytes.size(), 8u) << path;
  if (bytes.size() < 8) return {};
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = len << 8 | static_cast<uint8_t>(bytes[i]);
  auto header = nlohmann::json::parse(bytes.substr(8, len));
  size_t data = bytes.size() - 8 - len, covered = 0;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    size_t elems = 1;
    for (auto d : (*it)["shape"]) elems *= d.get<size_t>();
    size_t b = (*it)["data_offsets"][0], e = (*it)["data_offsets"][1];
    EXPECT_EQ(e - b, elems * 4) << it.key();
    EXPECT_LE(e, data) << it.key();
    covered += e - b;
  }
  EXPECT_EQ(covered, data) << "every data byte belongs to a tensor";
  return header;
}

// TFRecords of tensorflow.Event, read with the test's own CRC-32C and
// protobuf walk: the tags of every summary value, and which carried a
// histogram. Fails the test on a bad CRC or a truncated record.
uint32_t Crc32cBitwise(const std::string& s) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}
uint32_t Masked(const std::string& s) {
  uint32_t c = Crc32cBitwise(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
struct Field {
  int number;
  int wire;
  uint64_t varint;
  std::string bytes;
};
std::vector<Field> Fields(const std::string& msg) {
  std::vector<Field> out;
  size_t at = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; at < msg.size(); shift += 7) {
      uint8_t b = msg[at++];
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (at < msg.size()) {
    uint64_t key = varint();
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, {}};
    if (f.wire == 0) f.varint = varint();
    if (f.wire == 1) {
      f.bytes = msg.substr(at, 8);
      at += 8;
    }
    if (f.wire == 5) {
      f.bytes = msg.substr(at, 4);
      at += 4;
    }
    if (f.wire == 2) {
      size_t n = varint();
      f.bytes = msg.substr(at, n);
      at += n;
    }
    out.push_back(f);
  }
  return out;
}
struct Events {
  std::string file_version;
  std::map<std::string, int> scalars, histograms;  // tag -> count
};
Events ReadEvents(const std::string& dir) {
  Events ev;
  std::string files =
      RunCommand({"/bin/sh", "-c", "ls " + dir}, std::chrono::seconds(5)).out;
  std::vector<std::string> names = Lines(files);
  EXPECT_EQ(names.size(), 1u) << dir;
  if (names.empty()) return ev;
  EXPECT_EQ(names[0].rfind("events.out.tfevents.", 0), 0u) << names[0];
  std::string data = Slurp(dir + "/" + names[0]);
  size_t at = 0;
  while (at < data.size()) {
    EXPECT_GE(data.size() - at, 12u);
    if (data.size() - at < 12) break;
    std::string len_bytes = data.substr(at, 8);
    uint64_t len;
    uint32_t crc;
    std::memcpy(&len, len_bytes.data(), 8);
    std::memcpy(&crc, data.data() + at + 8, 4);
    EXPECT_EQ(crc, Masked(len_bytes));
    std::string event = data.substr(at + 12, len);
    std::memcpy(&crc, data.data() + at + 12 + len, 4);
    EXPECT_EQ(crc, Masked(event));
    at += 12 + len + 4;
    for (const Field& f : Fields(event)) {
      if (f.number == 3) ev.file_version = f.bytes;
      if (f.number != 5) continue;
      for (const Field& value : Fields(f.bytes)) {  // Summary.value
        std::string tag;
        bool histo = false, scalar = false;
        for (const Field& v : Fields(value.bytes)) {
          if (v.number == 1) tag = v.bytes;
          if (v.number == 2 && v.wire == 5) scalar = true;
          if (v.number == 5) histo = true;
        }
        if (scalar) ev.scalars[tag]++;
        if (histo) ev.histograms[tag]++;
      }
    }
  }
  return ev;
}

std::vector<std::string> Train(const TempDir& dir,
                               std::vector<std::string> flags) {
  std::vector<std::string> argv = {
      HVD_HOROVODRUN,     "-np",     "2", HVD_TRAIN_MNIST,
      "--checkpoint-dir", dir.path()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

TEST(TrainMnistTest, BasicModeLearnsAndCheckpointsEveryEpoch) {
  TempDir dir;
  Result r =
      RunCommand(Train(dir, {"--mode", "basic", "--epochs", "2",
                             "--train-limit", "3000", "--test-limit", "1000"}),
                 kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_GE(TestAccuracy(r.out), 0.85) << r.out;
  EXPECT_NE(r.out.find("[0]<stdout>:Epoch 2/2"), std::string::npos);
  EXPECT_EQ(r.out.find("[1]<stdout>:Epoch"), std::string::npos)
      << "rank 0 only";
  EXPECT_NE(r.out.find("Test loss: "), std::string::npos);
  // The ranks' state stayed identical (the trainer checks every epoch).
  EXPECT_EQ((r.out + r.err).find("differ"), std::string::npos) << r.err;
  // Keras' validation_data: every epoch's summary carries the test set's
  // loss and accuracy.
  EXPECT_NE(r.out.find(" - val_accuracy: "), std::string::npos) << r.out;
  for (int e : {1, 2}) {
    auto h = SafetensorsHeader(dir.path() + "/checkpoint-" + std::to_string(e) +
                               ".safetensors");
    EXPECT_EQ(h["__metadata__"]["epoch"], std::to_string(e));
    EXPECT_EQ(h["__metadata__"]["mode"], "basic");
    EXPECT_GT(std::stod(h["__metadata__"]["val_accuracy"].get<std::string>()),
              0.5);
    // Inputs standardised with the training images' statistics (MNIST's
    // are well known: mean 0.1307, standard deviation 0.3081).
    EXPECT_NEAR(std::stod(h["__metadata__"]["input_mean"].get<std::string>()),
                0.1307, 0.01);
    EXPECT_NEAR(std::stod(h["__metadata__"]["input_std"].get<std::string>()),
                0.3081, 0.01);
    EXPECT_EQ(h["conv2/kernel"]["shape"], nlohmann::json({64, 32, 3, 3}));
    EXPECT_EQ(h["dense1/kernel"]["shape"], nlohmann::json({128, 64, 12, 12}));
    EXPECT_TRUE(h.contains("optimizer/dense2/bias/accum_var"));
  }
}

TEST(TrainMnistTest, AdvancedModeCallbacksCsvBestCheckpointAndResume) {
  TempDir dir;
  Result r = RunCommand(Train(dir, {"--epochs", "2", "--warmup-epochs", "1",
                                    "--train-limit", "4096", "--test-limit",
                                    "512", "--log-dir", dir.path() + "/logs"}),
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_GE(TestAccuracy(r.out), 0.75) << r.out;
  EXPECT_EQ((r.out + r.err).find("differ"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("finished gradual learning rate warmup to 2."),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("val_accuracy: "), std::string::npos);
  // The CSV log: header and one row per epoch, lr as the warm-up left it.
  std::vector<std::string> rows =
      Lines(Slurp(dir.path() + "/training_log.csv"));
  ASSERT_EQ(rows.size(), 3u) << Slurp(dir.path() + "/training_log.csv");
  EXPECT_EQ(rows[0], "epoch,loss,accuracy,val_loss,val_accuracy,lr");
  std::vector<double> row;
  std::stringstream cells(rows[2]);
  for (std::string c; std::getline(cells, c, ',');) row.push_back(std::stod(c));
  ASSERT_EQ(row.size(), 6u);
  EXPECT_EQ(row[0], 1);
  EXPECT_GT(row[4], 0.5);          // val_accuracy
  EXPECT_NEAR(row[5], 2.0, 1e-6);  // lr 1.0 x 2 ranks
  // TensorBoard: scalars per epoch in train/ and validation/, weight
  // histograms in train/.
  Events train = ReadEvents(dir.path() + "/logs/train");
  EXPECT_EQ(train.file_version, "brain.Event:2");
  EXPECT_EQ(train.scalars["epoch_loss"], 2);
  EXPECT_EQ(train.scalars["epoch_accuracy"], 2);
  EXPECT_EQ(train.scalars["epoch_learning_rate"], 2);
  EXPECT_EQ(train.histograms["conv1/kernel"], 2);
  EXPECT_EQ(train.histograms["dense2/bias"], 2);
  Events val = ReadEvents(dir.path() + "/logs/validation");
  EXPECT_EQ(val.scalars["epoch_loss"], 2);
  EXPECT_EQ(val.scalars["epoch_accuracy"], 2);
  // Best-only checkpoints: epoch 1 always, epoch 2 only if it improved.
  auto h1 = SafetensorsHeader(dir.path() + "/checkpoint-1.safetensors");
  EXPECT_EQ(h1["__metadata__"]["mode"], "advanced");
  // --resume continues after epoch 1 for one more epoch, on inputs scaled
  // as the checkpoint's were (whatever --no-normalize says).
  Result again = RunCommand(
      Train(dir, {"--epochs", "2", "--warmup-epochs", "1", "--train-limit",
                  "4096", "--test-limit", "512", "--no-normalize", "--resume",
                  dir.path() + "/checkpoint-1.safetensors"}),
      kTimeout);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("Resumed from"), std::string::npos);
  EXPECT_NE(
      again.out.find(
          "inputs (x / 255 - " +
          h1["__metadata__"]["input_mean"].get<std::string>().substr(0, 4)),
      std::string::npos)
      << again.out;
  EXPECT_EQ(again.out.find("Epoch 1/2"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("Epoch 2/2"), std::string::npos);
  EXPECT_GE(TestAccuracy(again.out), 0.75);
  EXPECT_EQ(Lines(Slurp(dir.path() + "/training_log.csv")).size(), 4u);
}

// --no-normalize: the Keras examples' plain x / 255, recorded as such.
TEST(TrainMnistTest, NoNormalizeFeedsPlainPixels) {
  TempDir dir;
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "1", HVD_TRAIN_MNIST, "--checkpoint-dir",
       dir.path(), "--mode", "basic", "--epochs", "1", "--train-limit", "512",
       "--test-limit", "128", "--no-normalize"},
      kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find(", inputs x / 255, "), std::string::npos) << r.out;
  auto h = SafetensorsHeader(dir.path() + "/checkpoint-1.safetensors");
  EXPECT_EQ(h["__metadata__"]["input_mean"], "0");
  EXPECT_EQ(h["__metadata__"]["input_std"], "1");
}

TEST(TrainMnistTest, BadFlagsAndDataAreOneLineErrors) {
  Result r = RunCommand({HVD_TRAIN_MNIST, "--mode", "fancy"}, seconds(30));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--mode"), std::string::npos);
  r = RunCommand({HVD_TRAIN_MNIST, "--elastic", "--mode", "basic"},
                 seconds(30));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--elastic: runs the advanced mode"), std::string::npos)
      << r.err;
  r = RunCommand({HVD_TRAIN_MNIST, "--elastic", "--batches-per-commit", "0"},
                 seconds(30));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batches-per-commit"), std::string::npos) << r.err;
  TempDir dir;
  r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", HVD_TRAIN_MNIST, "--data-dir", dir.path()},
      seconds(60));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("train-images-idx3-ubyte"), std::string::npos) << r.err;
  dir.Write("bad.safetensors", "not a checkpoint at all");
  r = RunCommand({HVD_HOROVODRUN, "-np", "1", HVD_TRAIN_MNIST, "--resume",
                  dir.path() + "/bad.safetensors", "--train-limit", "256"},
                 seconds(60));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.safetensors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hvd::testing
