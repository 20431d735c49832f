// The resnet model kind: a bottleneck ResNet (He et al. 2016, Table 1) for image classification.
#include <fmt/format.h>

#include "model_kinds.h"

namespace tpusim::detail {

const FieldTable<ModelSpec>& resnet_fields() {
  using S = ModelSpec;
  static const FieldTable<ModelSpec> table = [] {
    auto t = model_base_fields();
    t.add<std::vector<int>>("blocks", [](S& s) -> std::vector<int>& { return s.resnet.blocks; }, std::nullopt,
                            "bottleneck blocks per stage, e.g. [3, 4, 6, 3]", positive_list(1, 16));
    t.add<std::vector<int>>("widths", [](S& s) -> std::vector<int>& { return s.resnet.widths; }, std::nullopt,
                            "bottleneck width of each stage, e.g. [64, 128, 256, 512]", positive_list(1, 16));
    t.add<int>("expansion", [](S& s) -> int& { return s.resnet.expansion; }, "4",
               "output channels of a block = width x expansion", in_range(1, kMaxRepeat));
    t.add<int>("stem_width", [](S& s) -> int& { return s.resnet.stem_width; }, "64",
               "channels of the 7x7 stride-2 stem convolution", in_range(1, 1 << 20));
    t.add<int>("image_size", [](S& s) -> int& { return s.resnet.image_size; }, "224", "input height and width",
               in_range(32, kMaxRepeat));
    t.add<int>("channels", [](S& s) -> int& { return s.resnet.channels; }, "3", "input channels", in_range(1, 1 << 20));
    t.add<int>("classes", [](S& s) -> int& { return s.resnet.classes; }, "1000", "outputs of the classifier",
               in_range(1, 1 << 24));
    return t;
  }();
  return table;
}

void check_resnet(const ModelSpec& spec, const std::string& path, Diagnostics& diags) {
  const ResnetModel& m = spec.resnet;
  if (m.blocks.size() != m.widths.size()) {
    // At the user's field of the two (blamed_field): `{from: resnet50, blocks: [2, 2]}` is wrong at blocks.
    if (blamed_field(spec.origins, "widths", "blocks") == "widths") {
      diags.error(origin_of(spec.origins, "widths"), key_path(path, "widths"), "one width per stage",
                  fmt::format("{} widths (blocks has {} stages)", m.blocks.size(), m.blocks.size()),
                  fmt::format("{} widths", m.widths.size()));
    } else {
      diags.error(origin_of(spec.origins, "blocks"), key_path(path, "blocks"), "one stage per width",
                  fmt::format("{} stages (widths has {} widths), or widths set too", m.widths.size(), m.widths.size()),
                  fmt::format("{} stages", m.blocks.size()));
    }
  }
  // The stem (stride 2), the max pool (stride 2) and every stage after the first (stride 2) halve the image.
  const int halvings = 2 + static_cast<int>(m.blocks.size()) - 1;
  if ((m.image_size >> halvings) < 1 || m.image_size % (1 << halvings) != 0) {
    diags.error(origin_of(spec.origins, "image_size"), key_path(path, "image_size"),
                "the image does not halve evenly through the stem, the pool and the stages",
                fmt::format("a multiple of {}", 1 << halvings), std::to_string(m.image_size));
  }
}

}  // namespace tpusim::detail
