# Training script excerpts as posted (data pipeline, main, train_step, SimpleDDP wrapper).
# Concatenated from the post's code blocks; "..." elisions are the author's.

def prepare_data(batch_size: int, rank: int, world_size: int):
    """Prepare the dataset for training and evaluation.

    Returns:
        train_loader: DataLoader for training dataset.
        eval_loader: DataLoader for evaluation dataset.
    """
    # Download raw dataset
    raw_dataset = get_dataset()
    # For quick experiments, sample a subset of dataset
    raw_dataset["train"] = raw_dataset["train"].shuffle(seed=42).select(range(32))
    raw_dataset["test"] = raw_dataset["test"].shuffle(seed=42).select(range(16))
    tokenized_dataset = tokenize_data(raw_dataset)
    train_ds, eval_ds = split_dataset(tokenized_dataset)

    if rank == 0:
        print(
            f"Dataset sizes -> train: {len(train_ds)} samples, "
            f"eval: {len(eval_ds)} samples (world size={world_size})"
        )
    # Create dataloaders using distributed samplers
    collator = get_data_collator()
    num_workers = min(8, os.cpu_count() // max(1, world_size))
    use_workers = num_workers > 0
    train_sampler = DistributedSampler(train_ds, num_replicas=world_size, rank=rank, shuffle=True)
    eval_sampler = DistributedSampler(eval_ds, num_replicas=world_size, rank=rank, shuffle=False)
    train_loader = DataLoader(
        train_ds,
        shuffle=False,
        batch_size=batch_size,
        sampler=train_sampler,
        pin_memory=True,
        collate_fn=collator,
        num_workers=num_workers,
        persistent_workers=use_workers,
        prefetch_factor=2 if use_workers else None,
    )
    eval_loader = DataLoader(
        eval_ds,
        batch_size=batch_size,
        sampler=eval_sampler,
        pin_memory=True,
        collate_fn=collator,
        num_workers=num_workers,
        persistent_workers=use_workers,
        prefetch_factor=2 if use_workers else None,
    )
    return train_loader, eval_loader


def train_loop(...):
    # Prepare various events we need to capture during training
    with profiler_cm as profiler:
        ...
        for batch_idx, batch in enumerate(data, start=1):
            # perform a training step of forward, loss and backward pass
            model, optimizer, loss = train_step(batch, model, optimizer)
            profiler.step()
        # Print memory consumed by optimizer, gradients and parameters
        print_memory_stats(...)
    
def evaluate(model, dataloader, device):
    model.eval()
    with torch.no_grad():
        for batch in dataloader:
            # move batch to GPU
            outputs = model(**batch)
            # get the prediction
            # compare the prediction and ground truth
    # calculate overall accuracy 


if __name__ == "__main__":
    set_seed(SEED)
    ddp_initialize()
    rank, world_size, local_rank = get_dist_info()
    per_device_batch = GLOBAL_BATCH_SIZE // world_size
    device = torch.device(f"cuda:{local_rank}")
    
    train_loader, eval_loader = prepare_data(per_device_batch, rank, world_size)
    model = get_model()
    model.to(device)

    # Select which DDP wrapper to use around model for distributed training
    model = SimpleDDP(model)
    optim = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model = train_loop(...)
    evaluate(model, eval_loader, device=device)
    
    ddp_cleanup()


def train_step(batch, model, optimizer):
    """Perform a single training step: forward, backward, optimizer step."""
    optimizer.zero_grad(set_to_none=True)
    outputs = model(**batch)
    loss = outputs.loss
    loss.backward()

    # Important step for SimpleDDP to sync gradients
    model.sync_gradients()

    optimizer.step()
    return model, optimizer, loss


# ddp/simple_ddp.py
import torch
import torch.distributed as dist
from utils.ddp_utils import get_dist_info

class SimpleDDP(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        self.rank, self.world_size, self.local_rank = get_dist_info()
        # broadcast parameters from rank 0 to all other ranks
        self.sync_parameters()

    def sync_parameters(self):
        """Broadcast parameters from rank 0 to all other ranks."""
        for param in self.model.parameters():
            # distributed comm: broadcast
            # broadcast parameter values across all ranks
            # to be same as that of rank 0
            dist.broadcast(tensor=param.data, src=0)

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def sync_gradients(self):
        """Average gradients across ranks."""
        # Synchronize gradients across all ranks
        for param in self.model.parameters():
            # distributed comm: All Reduce
            # To perform synchronization, we
            # first need to gather gradients from all ranks
            # sum all the gathered gradients
            # broadcast the summed results to all ranks
            # All this can be performed using single all_reduce operation
            if param.grad is not None:
                dist.all_reduce(tensor=param.grad, op=dist.ReduceOp.SUM)
                # Average the gradients by all ranks
                param.grad /= self.world_size
