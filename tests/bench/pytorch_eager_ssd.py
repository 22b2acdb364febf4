#!/usr/bin/env python3
"""PyTorch eager baseline for bench-train's ssd_resnet34: SSD300 with a ResNet-34
backbone as MLPerf Training's SSD reference defines it (v0.7-v1.0,
single_stage_detector/ssd: ssd300.py, base_model.py, utils.py, train.py), written anew:

- backbone: torchvision's resnet34 up to and including layer3 (conv4_x), with the
  stride of layer3's first block (conv1 and its downsample) set to 1: 256 x 38 x 38
  at 300 x 300;
- five extra blocks, each 1x1 conv + ReLU + 3x3 conv + ReLU (convolutions with bias,
  no BatchNorm, as the reference): 256->256->512 s2 (19), 512->256->512 s2 (10),
  512->128->256 s2 (5), 256->128->256 valid (3), 256->128->256 valid (1);
- heads: a 3x3 conv (bias, padding 1) per feature map for locations (4 per default
  box) and classes (81 per default box, background 0), 4/6/6/6/4/4 default boxes per
  cell, reshaped with view(N, 4 or 81, -1) and concatenated: N x 4 x 8732 and
  N x 81 x 8732;
- default boxes dboxes300_coco (feature maps 38/19/10/5/3/1, steps 8/16/32/64/100/300,
  scales 21/45/99/153/207/261/315, aspect ratios [2],[2,3],[2,3],[2,3],[2],[2]), xywh
  clamped to [0, 1]; per feature map the order is box shape outermost, then row, then
  column;
- loss: smooth L1 (beta 1) on the encoded offsets (scale_xy 0.1, scale_wh 0.2) of the
  positives + cross-entropy on the positives and the 3 x #positives hardest negatives,
  divided per image by its #positives, averaged over the batch (images without an
  object count 0);
- init: torchvision's for the backbone (no pretrained weights here), Xavier uniform
  for the weights of the extra blocks and heads;
- recipe: the reference's SGD, momentum 0.9, weight decay 5e-4 on every parameter,
  lr 2.5e-3 * batch / 32.

Synthetic data, as bench-train's: random images once; per image 1..MAX_BOXES (5) random
boxes (ltrb inside [0, 1], sides 0.05-0.5 of the image) with random classes 1..80, encoded
against the default boxes once (the reference's Encoder, IoU > 0.5, each ground-truth
box's best default box forced) and replayed every step.

Modes: --check verifies the parameter count (19,972,534) and the box count (8,732)
and the loss on a tiny case, exits 1 on a mismatch (ctest); --facts prints the
numbers a second implementation should match; otherwise it trains and prints one
JSON line, timed as tests/bench/pytorch_eager_resnet.py does (images in the measured
window after warm-up / the window's wall time; precisions: fp32, tf32 (CUDA), amp =
fp16 autocast + GradScaler on CUDA and bf16 autocast on CPU, bf16 = bf16 autocast;
the loss in fp32).
"""
import argparse
import itertools
import json
import math
import sys

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from torch_timing import time_steps

NUM_CLASSES = 81  # COCO's 80 + background
EXPECTED_PARAMETERS = 19_972_534
EXPECTED_BOXES = 8732
FEATURE_CHANNELS = [256, 512, 512, 256, 256, 256]
BOXES_PER_CELL = [4, 6, 6, 6, 4, 4]


# --- default boxes (dboxes300_coco) and the encoder --------------------------------

def default_boxes_xywh(fig_size=300, feat_size=(38, 19, 10, 5, 3, 1),
                       steps=(8, 16, 32, 64, 100, 300),
                       scales=(21, 45, 99, 153, 207, 261, 315),
                       aspect_ratios=((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))):
    boxes = []
    for k, fmap in enumerate(feat_size):
        fk = fig_size / steps[k]
        s1 = scales[k] / fig_size
        s2 = math.sqrt(s1 * scales[k + 1] / fig_size)
        shapes = [(s1, s1), (s2, s2)]
        for alpha in aspect_ratios[k]:
            w, h = s1 * math.sqrt(alpha), s1 / math.sqrt(alpha)
            shapes += [(w, h), (h, w)]
        for w, h in shapes:
            for i, j in itertools.product(range(fmap), repeat=2):
                boxes.append(((j + 0.5) / fk, (i + 0.5) / fk, w, h))
    return torch.tensor(boxes, dtype=torch.float32).clamp_(0, 1)


def xywh_to_ltrb(b):
    return torch.cat([b[:, :2] - 0.5 * b[:, 2:], b[:, :2] + 0.5 * b[:, 2:]], dim=1)


def iou(a, b):  # ltrb, (N, 4) x (M, 4) -> (N, M)
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    area_a = (a[:, 2:] - a[:, :2]).prod(dim=1)
    area_b = (b[:, 2:] - b[:, :2]).prod(dim=1)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def encode(boxes_ltrb, labels, dboxes_xywh, criteria=0.5):
    """One image's ground truth -> (8732 x 4 xywh boxes, 8732 labels), as the
    reference's Encoder.encode: each default box takes its best ground-truth box when
    the IoU > criteria; each ground-truth box's best default box takes it whatever the
    IoU (later ground-truth boxes win a shared default box). Unmatched default boxes
    keep their own coordinates and label 0."""
    dboxes_ltrb = xywh_to_ltrb(dboxes_xywh)
    ious = iou(boxes_ltrb, dboxes_ltrb)
    best_dbox_iou, best_dbox_idx = ious.max(dim=0)
    _, best_bbox_idx = ious.max(dim=1)
    best_dbox_iou.index_fill_(0, best_bbox_idx, 2.0)
    for g in range(best_bbox_idx.numel()):
        best_dbox_idx[best_bbox_idx[g]] = g
    mask = best_dbox_iou > criteria
    labels_out = torch.zeros(dboxes_xywh.size(0), dtype=torch.long)
    labels_out[mask] = labels[best_dbox_idx[mask]]
    out = dboxes_ltrb.clone()
    out[mask] = boxes_ltrb[best_dbox_idx[mask]]
    out = torch.cat([0.5 * (out[:, :2] + out[:, 2:]), out[:, 2:] - out[:, :2]], dim=1)
    return out, labels_out


# --- the model ----------------------------------------------------------------------

def resnet34_conv4(**kwargs):
    rn = torchvision.models.resnet34(**kwargs)
    rn.layer3[0].conv1.stride = (1, 1)
    rn.layer3[0].downsample[0].stride = (1, 1)
    return nn.Sequential(rn.conv1, rn.bn1, rn.relu, rn.maxpool, rn.layer1, rn.layer2,
                         rn.layer3)


def extra_block(cin, mid, cout, stride, padding):
    return nn.Sequential(
        nn.Conv2d(cin, mid, kernel_size=1), nn.ReLU(inplace=True),
        nn.Conv2d(mid, cout, kernel_size=3, stride=stride, padding=padding),
        nn.ReLU(inplace=True))


class SSDResNet34(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.num_classes = num_classes
        self.backbone = resnet34_conv4()
        c = FEATURE_CHANNELS
        self.extras = nn.ModuleList([
            extra_block(c[0], 256, c[1], 2, 1),
            extra_block(c[1], 256, c[2], 2, 1),
            extra_block(c[2], 128, c[3], 2, 1),
            extra_block(c[3], 128, c[4], 1, 0),
            extra_block(c[4], 128, c[5], 1, 0),
        ])
        self.loc = nn.ModuleList(
            nn.Conv2d(ch, nd * 4, kernel_size=3, padding=1) for nd, ch in zip(BOXES_PER_CELL, c))
        self.conf = nn.ModuleList(
            nn.Conv2d(ch, nd * num_classes, kernel_size=3, padding=1)
            for nd, ch in zip(BOXES_PER_CELL, c))
        for module in [*self.extras, *self.loc, *self.conf]:
            for p in module.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def forward(self, x):
        features = [self.backbone(x)]
        for block in self.extras:
            features.append(block(features[-1]))
        n = x.size(0)
        locs = torch.cat([l(f).view(n, 4, -1) for f, l in zip(features, self.loc)], 2)
        confs = torch.cat([c(f).view(n, self.num_classes, -1)
                           for f, c in zip(features, self.conf)], 2)
        return locs.contiguous(), confs.contiguous()


class SSDLoss(nn.Module):
    """ploc N x 4 x B, plabel N x C x B; gloc N x 4 x B (xywh, from encode), glabel N x B."""

    def __init__(self, dboxes_xywh, scale_xy=0.1, scale_wh=0.2):
        super().__init__()
        self.register_buffer("dboxes", dboxes_xywh.t().unsqueeze(0).contiguous())
        self.scale_xy, self.scale_wh = 1.0 / scale_xy, 1.0 / scale_wh
        self.last = {}

    def forward(self, ploc, plabel, gloc, glabel):
        mask = glabel > 0
        pos_num = mask.sum(dim=1)
        d = self.dboxes
        gxy = self.scale_xy * (gloc[:, :2] - d[:, :2]) / d[:, 2:]
        gwh = self.scale_wh * (gloc[:, 2:] / d[:, 2:]).log()
        vec_gd = torch.cat([gxy, gwh], dim=1)
        sl1 = F.smooth_l1_loss(ploc, vec_gd, reduction="none").sum(dim=1)
        sl1 = (mask.float() * sl1).sum(dim=1)
        con = F.cross_entropy(plabel, glabel, reduction="none")
        con_neg = con.clone()
        con_neg[mask] = 0
        _, con_idx = con_neg.sort(dim=1, descending=True)
        _, con_rank = con_idx.sort(dim=1)
        neg_num = torch.clamp(3 * pos_num, max=mask.size(1)).unsqueeze(-1)
        neg_mask = con_rank < neg_num
        closs = (con * (mask.float() + neg_mask.float())).sum(dim=1)
        total = sl1 + closs
        num_mask = (pos_num > 0).float()
        loss = (total * num_mask / pos_num.float().clamp(min=1e-6)).mean(dim=0)
        self.last = {"pos_num": pos_num, "neg_mask": neg_mask, "sl1": sl1, "closs": closs}
        return loss


# --- synthetic data -----------------------------------------------------------------

def synthetic_targets(batch, max_boxes, dboxes_xywh, generator=None):
    glocs, glabels = [], []
    for _ in range(batch):
        boxes_per_image = int(torch.randint(1, max_boxes + 1, (1,), generator=generator))
        wh = 0.05 + 0.45 * torch.rand(boxes_per_image, 2, generator=generator)
        lt = torch.rand(boxes_per_image, 2, generator=generator) * (1 - wh)
        boxes = torch.cat([lt, lt + wh], dim=1)
        labels = torch.randint(1, NUM_CLASSES, (boxes_per_image,), generator=generator)
        gloc, glabel = encode(boxes, labels, dboxes_xywh)
        glocs.append(gloc.t())
        glabels.append(glabel)
    return torch.stack(glocs), torch.stack(glabels)


# --- facts and checks ---------------------------------------------------------------

def parameter_breakdown(model):
    rows = [("backbone (resnet34 conv1..layer3)", model.backbone)]
    rows += [(f"extras[{i}]", m) for i, m in enumerate(model.extras)]
    rows += [("loc heads (6)", model.loc), ("conf heads (6)", model.conf)]
    return [(name, sum(p.numel() for p in m.parameters())) for name, m in rows]


def tiny_loss_case():
    """1 image, 2 ground-truth boxes, logits from torch.manual_seed(0)."""
    dboxes = default_boxes_xywh()
    boxes = torch.tensor([[0.10, 0.10, 0.40, 0.50], [0.50, 0.55, 0.90, 0.95]])
    labels = torch.tensor([3, 17])
    gloc, glabel = encode(boxes, labels, dboxes)
    torch.manual_seed(0)
    ploc = torch.randn(1, 4, dboxes.size(0))
    plabel = torch.randn(1, NUM_CLASSES, dboxes.size(0))
    crit = SSDLoss(dboxes)
    loss = crit(ploc, plabel, gloc.t().unsqueeze(0), glabel.unsqueeze(0))
    matched = torch.nonzero(glabel > 0).flatten()
    return {"boxes_ltrb": boxes.tolist(), "labels": labels.tolist(),
            "matched": [(int(i), int(glabel[i])) for i in matched],
            "positives": int(crit.last["pos_num"][0]),
            "negatives_kept": int(crit.last["neg_mask"][0].logical_and(glabel == 0).sum()),
            "sl1": float(crit.last["sl1"][0]), "closs": float(crit.last["closs"][0]),
            "loss": float(loss)}


def micro_loss_case():
    """Hand-checkable: 1 image, 6 default boxes, 3 classes, 1 positive (box 1, class 2)."""
    dboxes = torch.tensor([[0.5, 0.5, 0.2, 0.2]] * 6)
    gloc = dboxes.t().unsqueeze(0).clone()
    gloc[0, :, 1] = torch.tensor([0.52, 0.48, 0.2 * math.e ** 0.2, 0.2])  # offsets 1, -1, 1, 0
    glabel = torch.tensor([[0, 2, 0, 0, 0, 0]])
    ploc = torch.zeros(1, 4, 6)
    plabel = torch.zeros(1, 3, 6)
    plabel[0, 0] = torch.tensor([0.0, 0.0, -1.0, -2.0, -3.0, 1.0])  # background logits
    crit = SSDLoss(dboxes)
    loss = crit(ploc, plabel, gloc, glabel)
    return {"negatives_kept": torch.nonzero(crit.last["neg_mask"][0]).flatten().tolist(),
            "sl1": float(crit.last["sl1"][0]), "closs": float(crit.last["closs"][0]),
            "loss": float(loss)}


def facts():
    torch.manual_seed(1)
    model = SSDResNet34()
    total = sum(p.numel() for p in model.parameters())
    dboxes = default_boxes_xywh()
    locs, confs = model.eval()(torch.zeros(1, 3, 300, 300))
    out = [f"torch {torch.__version__}, torchvision {torchvision.__version__}",
           f"parameters: {total:,} (issue 17 says {EXPECTED_PARAMETERS:,})"]
    out += [f"  {name}: {n:,}" for name, n in parameter_breakdown(model)]
    out.append("extra-layer convs have biases: "
               + str(all(m.bias is not None for b in model.extras for m in b
                         if isinstance(m, nn.Conv2d)))
               + "; no BatchNorm in the extra blocks; heads have biases")
    out.append(f"default boxes: {dboxes.size(0)}; output shapes {tuple(locs.shape)}, {tuple(confs.shape)}")
    out.append("first default boxes (xywh):")
    out += [f"  {i}: " + ", ".join(f"{v:.6f}" for v in dboxes[i].tolist()) for i in range(6)]
    for start in (5776, 5776 + 2166, 8732 - 4):
        out.append(f"  {start}: " + ", ".join(f"{v:.6f}" for v in dboxes[start].tolist()))
    case = tiny_loss_case()
    out.append("tiny loss case: " + json.dumps(case))
    out.append("micro loss case: " + json.dumps(micro_loss_case()))
    return total, dboxes.size(0), case, "\n".join(out)


def check():
    total, nboxes, case, text = facts()
    print(text)
    ok = total == EXPECTED_PARAMETERS and nboxes == EXPECTED_BOXES
    ok = ok and case["negatives_kept"] == 3 * case["positives"]
    # The micro case by hand: offsets (1, -1, 1, 0) against 0 -> 1.5; the positive's
    # cross-entropy log 3; negatives' log(e^b + 2) - b for background logit b, the three
    # highest (b = -3, -2, -1) kept.
    micro = micro_loss_case()
    by_hand = 1.5 + math.log(3) + sum(math.log(math.exp(b) + 2) - b for b in (-3, -2, -1))
    print(f"micro case: {micro['loss']:.6f}, by hand {by_hand:.6f}")
    ok = ok and sorted(micro["negatives_kept"]) == [2, 3, 4] and abs(micro["loss"] - by_hand) < 1e-4
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


# --- timing -------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    p.add_argument("--facts", action="store_true")
    p.add_argument("--model", default="ssd_resnet34", choices=["ssd_resnet34"])
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "amp", "bf16"])
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--image-size", type=int, default=300)
    p.add_argument("--max-boxes", type=int, default=5,
                   help="ground-truth boxes per image: 1..N (bench-train's kMaxSyntheticObjects)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--channels-last", choices=["auto", "on", "off"], default="auto")
    a = p.parse_args()
    if a.check:
        return check()
    if a.facts:
        print(facts()[3])
        return 0
    if a.image_size != 300:
        raise SystemExit("SSD300's default boxes need --image-size 300")

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    channels_last = cuda if a.channels_last == "auto" else a.channels_last == "on"
    if cuda:
        torch.backends.cudnn.benchmark = True
        if a.precision in ("fp32", "tf32"):
            tf32 = a.precision == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
    elif a.precision == "tf32":
        raise SystemExit("tf32 needs a CUDA device")

    torch.manual_seed(1)
    model = SSDResNet34().to(device)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    kwargs = {}
    if cuda and "foreach" in torch.optim.SGD.__init__.__code__.co_varnames:
        kwargs["foreach"] = True
    optimizer = torch.optim.SGD(model.parameters(), lr=2.5e-3 * a.bs / 32, momentum=0.9,
                                weight_decay=5e-4, **kwargs)
    dboxes = default_boxes_xywh()
    criterion = SSDLoss(dboxes).to(device)

    images = torch.randn(a.bs, 3, a.image_size, a.image_size, device=device).contiguous(
        memory_format=memory_format)
    gloc, glabel = synthetic_targets(a.bs, a.max_boxes, dboxes)
    gloc, glabel = gloc.to(device), glabel.to(device)

    autocast_dtype = None
    if a.precision == "amp":
        autocast_dtype = torch.float16 if cuda else torch.bfloat16
    elif a.precision == "bf16":
        autocast_dtype = torch.bfloat16
    scaler = None
    if cuda and autocast_dtype == torch.float16:
        if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
            scaler = torch.amp.GradScaler("cuda")
        else:
            scaler = torch.cuda.amp.GradScaler()

    def step():
        optimizer.zero_grad(set_to_none=True)
        if autocast_dtype is not None:
            with torch.autocast(device_type=device.type, dtype=autocast_dtype):
                ploc, plabel = model(images)
        else:
            ploc, plabel = model(images)
        loss = criterion(ploc.float(), plabel.float(), gloc, glabel)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    window, loss, step_times = time_steps(step, a.warmup, a.iters, device)
    measured = (a.iters - a.warmup) * a.bs
    out = {"model": "ssd_resnet34", "images_per_second": measured / window, "window_s": window,
           "measured_images": measured, "loss": float(loss),
           "parameters": sum(p.numel() for p in model.parameters()),
           "positives_per_image": float((glabel > 0).sum()) / a.bs,
           "torch": torch.__version__, "torchvision": torchvision.__version__,
           "threads": torch.get_num_threads(), "channels_last": channels_last}
    if step_times:
        out["step_time_min_s"] = min(step_times)
        out["step_times_s"] = [round(t, 4) for t in step_times]
    if cuda:
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
