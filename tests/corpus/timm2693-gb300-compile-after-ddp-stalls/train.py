# timm train.py (timm 1.0+ task API), the lines the report points at (train.py ~L947-957)

    # Prepare task for distributed training
    if args.distributed:
        if utils.is_primary(args):
            _logger.info("Preparing task for distributed training")
        task.prepare_distributed(device_ids=[device])   # wraps the trainable model in DistributedDataParallel

    # Compile task if requested (should be done after DDP)
    if args.torchcompile:
        assert has_compile, 'A version of torch w/ torch.compile() is required for --compile, possibly a nightly.'
        if utils.is_primary(args):
            _logger.info(f"Compiling task with backend={args.torchcompile}, mode={args.torchcompile_mode}")
        task = torch.compile(task, backend=args.torchcompile, mode=args.torchcompile_mode)
