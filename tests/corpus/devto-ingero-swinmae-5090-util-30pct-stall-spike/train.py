# Swin-MAE window_masking (excerpt as posted)
# The hot loop: runs once per batch, every forward pass
for i in range(B):
    index_mask[i] = np.setdiff1d(index_all, index_keep.cpu().numpy()[i])

for i in range(B):
    x_masked[i, index_mask.cpu().numpy()[i, :], :] = mask_token
