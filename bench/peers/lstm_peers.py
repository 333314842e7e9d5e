"""Peers for bench/lstm_bench.cpp: the LSTM(256) (or --cell gru: GRU(256)) train step (batch 64 x 100 steps, 256 features,
return_sequences, loss mean(y^2), SGD 0.01) in Keras 3 / TensorFlow (tf.function) and PyTorch
(eager, and torch.compile when --compile), with 1 (default) or --threads N threads.
Run with the peer virtualenv: ~/.cache/eagerflow/peers/bin/python bench/peers/lstm_peers.py"""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--compile", action="store_true")
parser.add_argument("--only", choices=["tf", "torch"], default=None)
parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
args = parser.parse_args()
os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
import numpy as np  # noqa: E402

B, T, C, U = 64, 100, 256, 256
x_np = np.random.default_rng(0).normal(size=(B, T, C)).astype(np.float32)


def timeit(name, fn):
    fn()
    fn()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    print(f"{name:32s} threads={args.threads}  median {1e3 * np.median(times):8.2f} ms  min {1e3 * min(times):8.2f} ms")


if args.only in (None, "tf"):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras
    layer = (keras.layers.GRU if args.cell == "gru" else keras.layers.LSTM)(U, return_sequences=True)
    layer.build((B, T, C))
    opt = keras.optimizers.SGD(0.01)
    x_tf = tf.constant(x_np)

    @tf.function(jit_compile=False)
    def tf_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x)))
        g = tape.gradient(loss, layer.trainable_weights)
        opt.apply_gradients(zip(g, layer.trainable_weights))
        return loss

    timeit("keras3/tf tf.function", lambda: tf_step(x_tf).numpy())

if args.only in (None, "torch"):
    import torch
    torch.set_num_threads(args.threads)
    lstm = (torch.nn.GRU if args.cell == "gru" else torch.nn.LSTM)(C, U, batch_first=True)
    sgd = torch.optim.SGD(lstm.parameters(), lr=0.01)
    x_t = torch.from_numpy(x_np)

    def torch_step():
        sgd.zero_grad(set_to_none=True)
        y, _ = lstm(x_t)
        loss = (y * y).mean()
        loss.backward()
        sgd.step()
        return loss.item()

    timeit("torch eager", torch_step)
    if args.compile:
        compiled = torch.compile(torch_step)
        timeit("torch.compile", compiled)
