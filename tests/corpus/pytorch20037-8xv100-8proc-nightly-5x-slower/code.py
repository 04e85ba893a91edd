# main.py (excerpt as posted; the model/training part of the script is cut in the stored copy of the issue)
import argparse
import os
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data.distributed import DistributedSampler
from torch.utils import data
import torch.optim as optim

batch_size = 8
num_gpus = int(os.environ['WORLD_SIZE'])

class ToyDataset(data.Dataset):
    def __init__(self):
        super(ToyDataset, self).__init__()

    def __len__(self):
        return 3840

    def __getitem__(self, index):
        return np.random.rand(3, 800, 800).astype('f'), np.random.randint(0, 20, size=(800, 800)).astype('f')


class ToyNet(torch.nn.Module):
    def __init__(self):
        super(ToyNet, self).__init__()
        # ... (cut)
