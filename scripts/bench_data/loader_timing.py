"""What the Python sides of scripts/bench_data.sh share: a DataLoader timed as `cvtrain data bench`
times its pipeline (the first batch pays for worker start-up and is left out), as one JSON line."""
import json
import time

from torch.utils.data import DataLoader


def print_loader_rate(dataset, batch, workers, batches):
    loader = DataLoader(dataset, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers, prefetch_factor=4,
                        persistent_workers=True)
    images, done, start = 0, 0, None
    while done <= batches:
        for images_of_batch, _ in loader:
            if done == 0:
                start = time.perf_counter()
            else:
                images += images_of_batch.shape[0]
            done += 1
            if done > batches:
                break
    seconds = time.perf_counter() - start
    print(json.dumps({"images_per_s": images / seconds, "images": images, "seconds": seconds, "workers": workers}))
