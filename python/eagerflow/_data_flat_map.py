"""Dataset.flat_map(map_func, name=None): the elements of map_func(element)'s datasets, one
dataset after another, as tf.data's (an interleave of one dataset at a time)."""


def flat_map(self, map_func, name=None):
    return self.interleave(map_func, cycle_length=1, block_length=1)


def install(dataset_class):
    dataset_class.flat_map = flat_map
