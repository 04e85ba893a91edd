# mmcv/runner/epoch_based_runner.py (around line 48), as posted, with the reporter's timing prints added

        self.call_hook('before_train_epoch')
        time.sleep(2)  # Prevent possible deadlock during epoch transition
        print('before_train_epoch, time:{}'.format(time.time()-start_time))
        start_time = time.time()
        for i, data_batch in enumerate(self.data_loader):
            self._inner_iter = i
            print('before_train_iter_load_data, time:{}'.format(time.time()-start_time))
            # ... (rest of the loop unchanged)

# launched distributed (tools/dist_train.sh) with
#   configs/top_down/.../coco/res50_coco_256x192.py   (topdown_heatmap, COCO, ResNet-50 256x192)
# observed: the first batch of every epoch arrives ~180 s after the loop starts; later batches are normal
