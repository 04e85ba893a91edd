# As posted (the stored copy ends inside train(); BATCH_SIZE is defined earlier in the reporter's notebook)
import torch
import torchvision
import os
import time
from torch import tensor, Tensor
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import autocast
from torch.cuda.amp import GradScaler
from torch.utils.data import Dataset, DataLoader
from torchvision import models
from tqdm.notebook import tqdm

n_workers = 12

class TrainDataset(Dataset):
    def __len__(self):
        return 1760

    def __getitem__(self, idx):
        # Generate a random batch of inputs and labels
        x = torch.randint(0, 255, size=(3, 64, 224, 224), dtype=torch.uint8)
        y = torch.randint(0, 400, (1,))[0]

        return x, y

train_ds = TrainDataset()
train_dl = DataLoader(train_ds, batch_size=BATCH_SIZE, num_workers=n_workers, shuffle=True)

model = torchvision.models.video.r3d_18()

def train(model, train_dl, num_gpus, use_amp, warmup_iters):
    total_iters = len(train_dl)
    assert total_iters > 2*warmup_iters
    if num_gpus > 1:
        model = torch.nn.DataParallel(model, device_ids=list(range(num_gpus)))
    scaler = GradScaler(enabled=use_amp)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(mod  # [stored copy truncated here]
