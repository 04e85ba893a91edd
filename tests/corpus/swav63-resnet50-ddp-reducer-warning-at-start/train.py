# main_swav.py (facebookresearch/swav), DDP wrapping as posted in the issue
model = nn.parallel.DistributedDataParallel(
        model,
        device_ids=[args.gpu_to_work_on],
        find_unused_parameters=True,
    )
