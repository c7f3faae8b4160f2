"""A ResNet bottleneck as torchvision writes it: conv-bn-relu twice,
conv-bn, the skip (a projection where the shape changes) added in place,
then a ReLU. The model sparsify_fused's tests rewrite (test_torch.py on
the CPU, test_torch_gpu.py on the GPU); needs the real torch."""

import torch


class Bottleneck(torch.nn.Module):
    def __init__(self, c_in, width, stride, expansion=4):
        super().__init__()
        nn, out = torch.nn, expansion * width
        self.conv1, self.bn1 = nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2, self.relu = nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or c_in != out:
            self.down = nn.Sequential(nn.Conv2d(c_in, out, 1, stride, bias=False),
                                      nn.BatchNorm2d(out))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        y += x if self.down is None else self.down(x)
        return self.relu(y)
