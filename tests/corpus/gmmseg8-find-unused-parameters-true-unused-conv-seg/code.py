# configs/_gmmseg/models/base_model_config.py:1
find_unused_parameters = True

# mmseg/models/decode_heads/gmmseg_head.py:23
class GMMSegHead(BaseDecodeHead):
    ...

# mmseg/models/decode_heads/decode_head.py:104  (in BaseDecodeHead.__init__)
self.conv_seg = nn.Conv2d(channels, num_classes, kernel_size=1)
