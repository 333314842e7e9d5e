"""A distributed dataset's iterator gives get_next_as_optional, eagerly and in a trace."""
import numpy as np

import eagerflow as ef


def _iterator():
    strategy = ef.distribute.MirroredStrategy()
    return strategy, iter(strategy.experimental_distribute_dataset(ef.data.Dataset.range(9).batch(4)))


def test_eager_optional_until_the_end():
    _, it = _iterator()
    got = []
    while True:
        optional = it.get_next_as_optional()
        if not bool(optional.has_value()):
            break
        got.append(optional.get_value().numpy().tolist())
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]


def test_optional_in_a_tensor_loop_with_break():
    strategy, it = _iterator()

    @ef.function
    def count(iterator):
        n = ef.constant(0, ef.int64)
        total = ef.constant(0, ef.int64)
        for _ in ef.range(10):
            optional = iterator.get_next_as_optional()
            if not optional.has_value():
                break
            batch = strategy.run(lambda x: x, args=(optional.get_value(),))
            n += 1
            total += ef.reduce_sum(batch)
        return n, total

    n, total = count(it)
    assert int(n) == 3 and int(total) == int(np.arange(9).sum())
