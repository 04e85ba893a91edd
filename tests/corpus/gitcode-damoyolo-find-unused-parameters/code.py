# EDIT: reconstructed "before" form. The page states that detector.py builds DDP with
# find_unused_parameters=True by default; the page quotes only the fixed version verbatim:
#   def build_ddp_model(model, local_rank):
#       if torch.cuda.is_available():
#           model = DDP(model, device_ids=[local_rank], output_device=local_rank)
#       else:
#           model = DDP(model)
#       return model
def build_ddp_model(model, local_rank):
    if torch.cuda.is_available():
        model = DDP(model, device_ids=[local_rank], output_device=local_rank, find_unused_parameters=True)
    else:
        model = DDP(model)
    return model
