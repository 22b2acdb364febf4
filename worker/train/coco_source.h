// The COCO-format detection source (--data coco --data-dir ROOT), opened by OpenDataSource
// (data_source.h) for detection models (common/names.h).
//
// ROOT is laid out as MLPerf's SSD reference expects COCO:
//   ROOT/annotations/instances_<split>.json  read with coco_annotations.h; the first
//                                            "instances_*train*.json" in name order, else
//                                            the first "instances_*.json";
//   ROOT/<split>/<file_name>                 the images, <split> being the json's name
//                                            without "instances_" and ".json" (e.g.
//                                            instances_train2017.json -> ROOT/train2017/);
//                                            when ROOT/<split> is not a folder, ROOT/<file_name>.
//
// Loader threads (--loader-threads; 0: one per core; the prefetch engine's, prefetch.h) each
// take one (batch, position) at a time: decode the JPEG whole and resize it to image_size x
// image_size (image_folder.h, DecodeJpegFileResized; no crop, no flip, so the normalised
// boxes stay as they are), and encode the image's boxes against SSD300's default boxes
// (detection.h, EncodeTargets) on the CPU. A batch is uint8 NHWC images, labels [N, B]
// int64 and offsets [N, 4, B] fp32 (DeviceBatch's detection layout), written into
// kImageFolderSlots host slots (pinned on CUDA, copied asynchronously into one device
// buffer; a slot goes back once Done).
//
// Sampling as the imagefolder source: a fresh seeded permutation of the annotated images
// every epoch; rank r of w takes every w-th entry, the tail that does not divide evenly is
// dropped.
//
// Errors before training (INVALID_ARGUMENT naming the file): no annotation file, a corrupt
// one (coco_annotations.h's messages), an image file the annotations name that does not
// exist, more categories than --num-classes - 1, fewer images than ranks. An image that
// fails to decode during training stops it: Next() returns an error naming the file.
//
// Thread-safety: one consumer thread (the rank's training loop); the destructor stops and
// joins the loader threads.
#ifndef BENCHFLEET_WORKER_TRAIN_COCO_SOURCE_H_
#define BENCHFLEET_WORKER_TRAIN_COCO_SOURCE_H_

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "worker/train/data_source.h"
#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

// Where a COCO folder's annotations and images are (see above).
struct CocoFolder {
  std::string annotations_file;
  std::string images_dir;
};
StatusOr<CocoFolder> LocateCocoFolder(const std::string& root);

StatusOr<std::unique_ptr<DataSource>> OpenCocoSource(const TrainOptions& options,
                                                     const c10::Device& device);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_COCO_SOURCE_H_
