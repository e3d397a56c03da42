"""tests/tools/onnx_export.py - ONNX files for tests/unit/test_onnx_import.c, made at test time
with PyTorch's exporter (nothing binary is committed).

Usage: /usr/bin/python3 tests/tools/onnx_export.py OUTDIR
Writes into OUTDIR:
  cnn_eval.onnx      a small CNN exported in eval mode (opset 13; batch norm folded into
                     the convolutions by the exporter);
  cnn_preserve.onnx  the same network with its BatchNormalization node kept
                     (TrainingMode.PRESERVE of a module in eval mode, no constant folding);
  x.bin, logits.bin  an input batch (4, 3, 20, 18) and torch's logits (4, 10) for it,
                     float32 little-endian;
  softplus.onnx      a network with an operator pacer does not support (Softplus);
  view_dynamic.onnx  a network flattening with x.view(x.size(0), -1), exported with a
  view_logits.bin    dynamic batch axis (Shape/Gather/Unsqueeze/Concat), and its logits for x;
  acts.onnx          ActNet (leaky ReLU, sigmoid, tanh, concat, batch norm eps 1e-3, Gemm
  acts_logits.bin    with transB 0 and alpha/beta) in eval mode, its logits, and the same
  acts_train.onnx    exported in training mode (with its Dropout node), and its evaluation
  acts_train_logits.bin  logits (tracing moved the running statistics);
  matmul.onnx        x @ W (+ b) as MatMul (and Add), and its logits;
  matmul_logits.bin
  cnn_grads.*, acts_grads.*  torch's gradients of both networks' training step (save_grads);
  tiny.onnx          a 2 KB network of most mapped operators (batch norm kept, depthwise
                     convolution, residual Add, Pad + AveragePool, Gemm): the seed of
                     fuzz/corpus/onnx/ (copied there by hand, see docs/TESTING.md).

Usage: /usr/bin/python3 tests/tools/onnx_export.py --mnist OUTDIR
Writes only the networks tests/integration/onnx_train.sh trains on MNIST (1x28x28, 10
classes), exported as a PyTorch user would for training (training mode, no constant
folding, so batch norm and dropout are kept):
  mnist_cnn.onnx     conv + batch norm + ReLU + max pool, twice, dropout, Linear;
  mnist7.onnx        the same with 7 outputs (a data set of 10 classes does not fit);
  mnist_softplus.onnx  a Softplus in it (an operator pacer does not support);
  mnist_acts.onnx    MnistActs: the layers only imported graphs have (leaky ReLU, sigmoid,
                     tanh, a channel concatenation with the image, batch norm eps 1e-3, a
                     dilated depthwise convolution, ceil-mode pooling with pads, dropout, a
                     Gemm with transB 0, alpha 2, beta 0.5), for the GPU path on the stand-in
                     device (tests/integration/gpu_path_fake_device.sh).
Usage: /usr/bin/python3 tests/tools/onnx_export.py --zoo OUTDIR
Writes the networks tests/integration/onnx_zoo.sh trains on MNIST, each as a PyTorch user
would export it for training (as --mnist), under the class name the file is named after
(tests/tools/onnx_check.py --module loads the trained weights back into that class):
  LeNet5.onnx      the built-in lenet5's graph (conv, max pool, ReLU; three Linear layers),
                   under its tensor names (bench/onnx_import.sh compares the two);
  VggBN.onnx       two VGG stages of 3x3 convolutions with batch norm, dropout between
                   the Linear layers;
  ResNetProj.onnx  residual blocks whose shortcut is a projection (1x1 convolution of
                   stride 2 and batch norm);
  DwSep.onnx       depthwise-separable blocks (a 3x3 convolution of groups = channels,
                   then a 1x1 one), batch norm after each;
  DenseCat.onnx    DenseNet-style blocks (each layer's output concatenated to its input
                   along channels) and a transition layer with average pooling.
Usage: /usr/bin/python3 tests/tools/onnx_export.py --resnet18 OUTDIR
Writes ResNet18.onnx: ResNet-18 for CIFAR-10 (3x32x32), exported for training as --zoo
does, for bench/resnet18_onnx.sh (bench/torch_lenet.py trains the same class).
Exits 77 when torch or onnx cannot be imported (the test then skips, saying so).
"""
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import onnx  # noqa: F401  (the exporter needs it)
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_export: torch/onnx not importable: %s" % e)
    sys.exit(77)


class Net(nn.Module):
    """Covers what the importer maps: a padded convolution with batch norm, ceil-mode max
    pooling with padding, a depthwise convolution (channel multiplier 2, dilation, per-axis
    padding) and a pointwise one, a residual Add, a rectangular-stride convolution, average
    pooling with and without count_include_pad (the former exported as Pad + AveragePool),
    Flatten and a Linear layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.dw = nn.Conv2d(8, 16, 3, padding=(1, 2), dilation=(1, 2), groups=8, bias=False)
        self.pw = nn.Conv2d(16, 16, 1)
        self.proj = nn.Conv2d(8, 16, 1, bias=False)
        self.conv3 = nn.Conv2d(16, 12, (3, 2), stride=(2, 1), padding=(1, 0))
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.pool3 = nn.AvgPool2d(2, stride=1, padding=1)
        self.fc = nn.Linear(12 * 5 * 6, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.pool1(x)
        y = F.relu(self.pw(self.dw(x)))
        x = F.relu(y + self.proj(x))
        x = F.relu(self.conv3(x))
        x = self.pool3(self.pool2(x))
        return self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1]
    torch.manual_seed(1)
    net = Net()
    with torch.no_grad():
        net.bn1.running_mean.uniform_(-0.5, 0.5)
        net.bn1.running_var.uniform_(0.5, 2.0)
        net.bn1.weight.uniform_(0.5, 1.5)
        net.bn1.bias.uniform_(-0.5, 0.5)
    net.eval()
    x = torch.randn(4, 3, 20, 18)
    with torch.no_grad():
        logits = net(x)
    assert logits.shape == (4, 10), logits.shape
    x.numpy().astype("<f4").tofile(out + "/x.bin")
    logits.numpy().astype("<f4").tofile(out + "/logits.bin")
    torch.onnx.export(net, x, out + "/cnn_eval.onnx", opset_version=13,
                      input_names=["input"], output_names=["logits"])
    torch.onnx.export(net, x, out + "/cnn_preserve.onnx", opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"])

    class Soft(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.fc = nn.Linear(4 * 18 * 16, 10)

        def forward(self, x):
            return self.fc(torch.flatten(F.softplus(self.conv(x)), 1))

    torch.onnx.export(Soft().eval(), x, out + "/softplus.onnx", opset_version=13,
                      input_names=["input"], output_names=["logits"])
    tiny(out)
    view_net(out, x)
    act_net(out, x)
    mat_net(out, x)
    save_grads(net, x, out, "cnn_grads")


class ActNet(nn.Module):
    """The layers only imported graphs have: leaky ReLU, sigmoid, tanh, a three-way channel
    concatenation (one input the image itself), batch norm with epsilon 1e-3, dropout, and a
    Gemm with transB = 0, alpha 2 and beta 0.5 (torch.addmm)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6, eps=1e-3)
        self.c2 = nn.Conv2d(6, 4, 3, padding=1)
        self.drop = nn.Dropout(0.3)
        self.W = nn.Parameter(torch.randn(13 * 5 * 4, 10) * 0.05)
        self.b = nn.Parameter(torch.randn(10) * 0.1)

    def forward(self, x):
        y = F.leaky_relu(self.bn(self.c1(x)), 0.1)
        z = torch.sigmoid(self.c2(y))
        u = F.max_pool2d(torch.cat([z, torch.tanh(y), x], 1), 4)
        u = self.drop(torch.flatten(u, 1))
        return torch.addmm(self.b, u, self.W, beta=0.5, alpha=2.0)


def save_grads(net, x, out, name):
    """Gradients of the mean cross-entropy for labels 0..3 in training mode, for
    model_backward to match: NAME.txt lists "tensor count" per parameter, NAME.bin holds
    them in that order."""
    net.train()
    net.zero_grad()
    F.cross_entropy(net(x), torch.arange(x.shape[0]) % 10).backward()
    with open(out + "/" + name + ".txt", "w") as f, open(out + "/" + name + ".bin", "wb") as b:
        for pname, prm in net.named_parameters():
            f.write("%s %d\n" % (pname, prm.numel()))
            b.write(prm.grad.detach().numpy().astype("<f4").tobytes())


def act_net(out, x):
    torch.manual_seed(4)
    net = ActNet()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    net.eval()
    with torch.no_grad():
        net(x).numpy().astype("<f4").tofile(out + "/acts_logits.bin")
    torch.onnx.export(net, x, out + "/acts.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"])
    # a module in training mode exports its Dropout node (and batch norm's training form)
    net.train()
    torch.onnx.export(net, x, out + "/acts_train.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"])
    # tracing in training mode moved batch norm's running statistics: the file has the new ones
    net.eval()
    with torch.no_grad():
        net(x).numpy().astype("<f4").tofile(out + "/acts_train_logits.bin")
    net.drop.p = 0.0  # the gradients compare without dropout (its masks are pacer's own)
    save_grads(net, x, out, "acts_grads")


class MatNet(nn.Module):
    """x @ W + b (MatMul followed by Add), and a bias-free x @ W2 feeding it."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 3, stride=3)
        self.W2 = nn.Parameter(torch.randn(2 * 6 * 6, 16) * 0.1)
        self.W = nn.Parameter(torch.randn(16, 10) * 0.2)
        self.b = nn.Parameter(torch.randn(10) * 0.1)

    def forward(self, x):
        h = torch.relu(torch.flatten(self.conv(x), 1) @ self.W2)
        return h @ self.W + self.b


def mat_net(out, x):
    torch.manual_seed(5)
    net = MatNet().eval()
    with torch.no_grad():
        net(x).numpy().astype("<f4").tofile(out + "/matmul_logits.bin")
    torch.onnx.export(net, x, out + "/matmul.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"])


class ViewNet(nn.Module):
    """Flattens with x.view(x.size(0), -1), exported with a dynamic batch axis: the graph
    computes the shape with Shape, Gather, Unsqueeze and Concat."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 5, stride=2)
        self.fc = nn.Linear(4 * 4 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.view(x.size(0), -1))


def view_net(out, x):
    torch.manual_seed(3)
    net = ViewNet().eval()
    with torch.no_grad():
        net(x).numpy().astype("<f4").tofile(out + "/view_logits.bin")
    torch.onnx.export(net, x, out + "/view_dynamic.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, groups=2)
        self.short = nn.Conv2d(2, 4, 1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.AvgPool2d(2, stride=2, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        x = self.pool(y + self.short(x))
        return self.fc(torch.flatten(x, 1))


def tiny(out):
    torch.manual_seed(2)
    torch.onnx.export(Tiny().eval(), torch.randn(1, 2, 6, 6), out + "/tiny.onnx", opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"])


class MnistNet(nn.Module):
    def __init__(self, classes=10, act=F.relu):
        super().__init__()
        self.act = act
        self.conv1 = nn.Conv2d(1, 8, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.bn2 = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 5 * 5, classes)

    def forward(self, x):
        x = F.max_pool2d(self.act(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(self.act(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


class MnistActs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6, eps=1e-3)
        self.dw = nn.Conv2d(6, 12, 3, padding=(1, 2), dilation=(1, 2), groups=6, bias=False)
        self.drop = nn.Dropout(0.3)
        self.W = nn.Parameter(torch.randn(19 * 8 * 8, 10) * 0.02)
        self.b = nn.Parameter(torch.randn(10) * 0.1)

    def forward(self, x):
        y = F.leaky_relu(self.bn(self.c1(x)), 0.1)
        u = torch.cat([torch.sigmoid(self.dw(y)), torch.tanh(y), x], 1)
        u = F.max_pool2d(u, 3, stride=2, padding=1, ceil_mode=True)
        u = F.avg_pool2d(u, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        u = self.drop(torch.flatten(u, 1))
        return torch.addmm(self.b, u, self.W, beta=0.5, alpha=2.0)


def mnist(out):
    torch.manual_seed(4)
    x = torch.randn(2, 1, 28, 28)  # tracing in training mode moves the running statistics by it
    for name, kw in (("mnist_cnn", {}), ("mnist7", {"classes": 7}), ("mnist_softplus", {"act": F.softplus})):
        torch.manual_seed(5)  # the same starting weights every time: the test's run is repeatable
        net = MnistNet(**kw).train()
        torch.onnx.export(net, x, "%s/%s.onnx" % (out, name), opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    torch.manual_seed(6)
    torch.onnx.export(MnistActs().train(), x, out + "/mnist_acts.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})


# ---- --zoo: the network families of issue 25, tiny widths for MNIST (1x28x28, 10 classes) ----


class LeNet5(nn.Module):
    """The built-in lenet5 (model/model.c): max pooling before the ReLU, as pacer computes
    it (the same result as ReLU first), and the built-in's tensor names."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def conv_bn(cin, cout, k=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class VggBN(nn.Module):
    """Two VGG stages (3x3 convolution, batch norm, ReLU, twice, then 2x2 max pooling) and
    a classifier with dropout between its Linear layers."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn(1, 8), conv_bn(8, 8), nn.MaxPool2d(2),
                                      conv_bn(8, 16), conv_bn(16, 16), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Dropout(0.3), nn.Linear(16 * 7 * 7, 32), nn.ReLU(),
                                        nn.Dropout(0.3), nn.Linear(32, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class ProjBlock(nn.Module):
    """A residual block that halves the resolution: its shortcut is a 1x1 convolution of
    stride 2 with batch norm (a projection), as torchvision's downsample."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNetProj(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 8)
        self.layer1 = ProjBlock(8, 16)  # 28 -> 14
        self.layer2 = ProjBlock(16, 16)  # 14 -> 7
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(x, 1))


class DwSep(nn.Module):
    """Depthwise-separable blocks (MobileNet's): a 3x3 convolution with groups = channels,
    then a pointwise 1x1 one, batch norm and ReLU after each."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 8)
        self.block1 = nn.Sequential(conv_bn(8, 8, groups=8), conv_bn(8, 16, k=1))
        self.block2 = nn.Sequential(conv_bn(16, 16, stride=2, groups=16), conv_bn(16, 16, k=1))
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(self.stem(x), 2)  # 28 -> 14
        x = self.block2(self.block1(x))  # 14 -> 7
        return self.fc(torch.flatten(x, 1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, growth, 3, padding=1, bias=False)

    def forward(self, x):
        return torch.cat([x, self.conv(F.relu(self.bn(x)))], 1)


class DenseCat(nn.Module):
    """DenseNet-style: each layer's new channels concatenated to its input, two layers a
    block, a transition (batch norm, ReLU, 1x1 convolution, 2x2 average pooling) between
    the blocks."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.block1 = nn.Sequential(DenseLayer(8, 6), DenseLayer(14, 6))
        self.trans_bn = nn.BatchNorm2d(20)
        self.trans = nn.Conv2d(20, 12, 1, bias=False)
        self.block2 = nn.Sequential(DenseLayer(12, 6), DenseLayer(18, 6))
        self.bn = nn.BatchNorm2d(24)
        self.fc = nn.Linear(24 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(self.stem(x), 2)  # 28 -> 14
        x = self.block1(x)
        x = F.avg_pool2d(self.trans(F.relu(self.trans_bn(x))), 2)  # 14 -> 7
        x = F.relu(self.bn(self.block2(x)))
        return self.fc(torch.flatten(x, 1))


ZOO = (LeNet5, VggBN, ResNetProj, DwSep, DenseCat)


class BasicBlock(nn.Module):
    """ResNet-18's block: two 3x3 convolutions with batch norm, the shortcut the identity or,
    where the block halves the resolution or changes the channels, a 1x1 convolution of the
    block's stride with batch norm."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 as it is trained on CIFAR-10 (3x32x32): a 3x3 stem of 64 channels, no max
    pooling, four stages of two blocks (64, 128, 256, 512 channels; the last three halve
    the resolution), global average pooling, one Linear layer; 11.2M parameters, the
    network bench/resnet18_onnx.sh imports (not part of the tests: 45 MB)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18(out):
    torch.manual_seed(7)
    torch.onnx.export(ResNet18().train(), torch.randn(2, 3, 32, 32), "%s/ResNet18.onnx" % out, opset_version=13,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})


def zoo(out):
    for cls in ZOO:
        torch.manual_seed(7)  # the same starting weights every time: the test's runs are repeatable
        net = cls().train()
        x = torch.randn(2, 1, 28, 28)  # tracing in training mode moves the running statistics by it
        torch.onnx.export(net, x, "%s/%s.onnx" % (out, cls.__name__), opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--mnist":
        mnist(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--zoo":
        zoo(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--resnet18":
        resnet18(sys.argv[2])
    else:
        main()
