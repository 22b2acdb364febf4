#include "worker/train/coco_annotations.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

namespace bench_train {
namespace {

using nlohmann::json;

std::string Num(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// The member `key` of `object` (named `where` in messages) with JSON type `type`.
StatusOr<const json*> Member(const json& object, const char* key, json::value_t type,
                             const std::string& name, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) {
    return InvalidArgumentError(name + ": " + where + " has no \"" + key + "\"");
  }
  const bool number = type == json::value_t::number_float;
  const bool integer = type == json::value_t::number_integer;
  if ((number && !it->is_number()) || (integer && !it->is_number_integer()) ||
      (!number && !integer && it->type() != type)) {
    return InvalidArgumentError(name + ": " + where + ": \"" + key + "\" is " + it->type_name() +
                                ", not " +
                                (number    ? "a number"
                                 : integer ? "an integer"
                                           : json(type).type_name()));
  }
  return &*it;
}

StatusOr<const json*> Array(const json& root, const char* key, const std::string& name) {
  return Member(root, key, json::value_t::array, name, "the file");
}

}  // namespace

StatusOr<CocoAnnotations> ParseCocoAnnotations(const std::string& text, const std::string& name) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double (e.g. 1e400).
    return InvalidArgumentError(name + ": not valid JSON (corrupt or cut short?): " + e.what());
  }
  if (!root.is_object()) {
    return InvalidArgumentError(name + ": not a COCO annotation file (its top level is " +
                                root.type_name() + ", not an object)");
  }
  BENCH_TRAIN_ASSIGN_OR_RETURN(const json* categories, Array(root, "categories", name));
  BENCH_TRAIN_ASSIGN_OR_RETURN(const json* images, Array(root, "images", name));
  BENCH_TRAIN_ASSIGN_OR_RETURN(const json* annotations, Array(root, "annotations", name));

  CocoAnnotations out;
  std::unordered_map<int64_t, int> label_of;
  for (size_t i = 0; i < categories->size(); ++i) {
    const json& category = (*categories)[i];
    const std::string where = "categories[" + std::to_string(i) + "]";
    if (!category.is_object())
      return InvalidArgumentError(name + ": " + where + " is not an object");
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        const json* id, Member(category, "id", json::value_t::number_integer, name, where));
    const int64_t category_id = id->get<int64_t>();
    if (!label_of.emplace(category_id, static_cast<int>(out.category_ids.size()) + 1).second) {
      return InvalidArgumentError(name + ": " + where + ": category id " +
                                  std::to_string(category_id) + " given twice");
    }
    out.category_ids.push_back(category_id);
  }

  std::vector<CocoImage> all;
  std::unordered_map<int64_t, size_t> index_of;
  for (size_t i = 0; i < images->size(); ++i) {
    const json& image = (*images)[i];
    const std::string where = "images[" + std::to_string(i) + "]";
    if (!image.is_object()) return InvalidArgumentError(name + ": " + where + " is not an object");
    BENCH_TRAIN_ASSIGN_OR_RETURN(const json* id,
                                 Member(image, "id", json::value_t::number_integer, name, where));
    BENCH_TRAIN_ASSIGN_OR_RETURN(const json* file,
                                 Member(image, "file_name", json::value_t::string, name, where));
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        const json* width, Member(image, "width", json::value_t::number_integer, name, where));
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        const json* height, Member(image, "height", json::value_t::number_integer, name, where));
    CocoImage entry;
    entry.id = id->get<int64_t>();
    entry.file_name = file->get<std::string>();
    const int64_t w = width->get<int64_t>();
    const int64_t h = height->get<int64_t>();
    if (w <= 0 || h <= 0 || w > (1 << 20) || h > (1 << 20)) {
      return InvalidArgumentError(name + ": " + where + " (id " + std::to_string(entry.id) +
                                  "): size " + std::to_string(w) + "x" + std::to_string(h) +
                                  " is not a positive image size");
    }
    entry.width = static_cast<int>(w);
    entry.height = static_cast<int>(h);
    if (!index_of.emplace(entry.id, all.size()).second) {
      return InvalidArgumentError(name + ": " + where + ": image id " + std::to_string(entry.id) +
                                  " given twice");
    }
    all.push_back(std::move(entry));
  }

  for (size_t i = 0; i < annotations->size(); ++i) {
    const json& annotation = (*annotations)[i];
    std::string where = "annotations[" + std::to_string(i) + "]";
    if (!annotation.is_object()) {
      return InvalidArgumentError(name + ": " + where + " is not an object");
    }
    if (auto id = annotation.find("id"); id != annotation.end() && id->is_number_integer()) {
      where += " (id " + std::to_string(id->get<int64_t>()) + ")";
    }
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        const json* image_id,
        Member(annotation, "image_id", json::value_t::number_integer, name, where));
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        const json* category_id,
        Member(annotation, "category_id", json::value_t::number_integer, name, where));
    BENCH_TRAIN_ASSIGN_OR_RETURN(const json* bbox,
                                 Member(annotation, "bbox", json::value_t::array, name, where));
    auto image = index_of.find(image_id->get<int64_t>());
    if (image == index_of.end()) {
      return InvalidArgumentError(name + ": " + where + ": unknown image id " +
                                  std::to_string(image_id->get<int64_t>()) +
                                  " (not in \"images\")");
    }
    auto label = label_of.find(category_id->get<int64_t>());
    if (label == label_of.end()) {
      return InvalidArgumentError(name + ": " + where + ": unknown category id " +
                                  std::to_string(category_id->get<int64_t>()) +
                                  " (not in \"categories\")");
    }
    if (bbox->size() != 4 ||
        !std::all_of(bbox->begin(), bbox->end(), [](const json& v) { return v.is_number(); })) {
      return InvalidArgumentError(name + ": " + where + ": bbox " + bbox->dump() +
                                  " is not four numbers [x, y, width, height]");
    }
    const double x = (*bbox)[0].get<double>();
    const double y = (*bbox)[1].get<double>();
    const double w = (*bbox)[2].get<double>();
    const double h = (*bbox)[3].get<double>();
    CocoImage& target = all[image->second];
    const std::string box_text =
        "bbox [" + Num(x) + ", " + Num(y) + ", " + Num(w) + ", " + Num(h) + "]";
    if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(w) || !std::isfinite(h) || w < 0 ||
        h < 0) {
      return InvalidArgumentError(name + ": " + where + ": " + box_text +
                                  " has a negative or non-finite size");
    }
    if (x < -kBoxSlackPixels || y < -kBoxSlackPixels || x + w > target.width + kBoxSlackPixels ||
        y + h > target.height + kBoxSlackPixels) {
      return InvalidArgumentError(name + ": " + where + ": " + box_text + " is outside its image " +
                                  std::to_string(target.id) + " (" + std::to_string(target.width) +
                                  "x" + std::to_string(target.height) + ")");
    }
    auto clamp = [](double v) { return static_cast<float>(std::min(1.0, std::max(0.0, v))); };
    CocoBox box;
    box.left = clamp(x / target.width);
    box.top = clamp(y / target.height);
    box.right = clamp((x + w) / target.width);
    box.bottom = clamp((y + h) / target.height);
    box.label = label->second;
    if (!(box.right > box.left) || !(box.bottom > box.top)) {
      ++out.empty_boxes;
      continue;
    }
    target.boxes.push_back(box);
  }

  for (CocoImage& image : all) {
    if (image.boxes.empty()) {
      ++out.images_without_boxes;
    } else {
      out.images.push_back(std::move(image));
    }
  }
  return out;
}

StatusOr<CocoAnnotations> ReadCocoAnnotations(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(path + ": cannot open the annotation file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(path + ": cannot read the annotation file");
  return ParseCocoAnnotations(text.str(), path);
}

StatusOr<std::string> FindCocoAnnotationFile(const std::string& root, const std::string& split) {
  const std::string folder = root + "/annotations";
  DIR* dir = opendir(folder.c_str());
  const std::string wanted =
      "instances_*" + (split.empty() ? std::string() : split + "*") + ".json";
  if (dir == nullptr) {
    return InvalidArgumentError(root + ": no annotations folder (looked for " + folder + "/" +
                                wanted + ")");
  }
  std::vector<std::string> found;
  while (dirent* entry = readdir(dir)) {
    const std::string file = entry->d_name;
    if (file.size() > 15 && file.rfind("instances_", 0) == 0 &&
        file.compare(file.size() - 5, 5, ".json") == 0 &&
        (split.empty() || file.find(split) != std::string::npos)) {
      found.push_back(file);
    }
  }
  closedir(dir);
  if (found.empty()) {
    return InvalidArgumentError(root + ": no " + folder + "/" + wanted);
  }
  std::sort(found.begin(), found.end());
  return folder + "/" + found.front();
}

}  // namespace bench_train
