# kimiyoung/transformer-xl  pytorch/train.py (multi-GPU setup as shipped; run_wt103_base.sh passes --multi_gpu --gpu0_bsz 4)

if args.multi_gpu:
    model = model.to(device)
    if args.gpu0_bsz >= 0:
        para_model = BalancedDataParallel(args.gpu0_bsz // args.batch_chunk,
                                          model, dim=1).to(device)
    else:
        para_model = nn.DataParallel(model, dim=1).to(device)
else:
    para_model = model.to(device)
