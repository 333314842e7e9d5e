"""tf.io's records and tensors from Python: TFRecordWriter / TFRecordDataset (plain, GZIP, ZLIB,
and a file TensorFlow wrote), tf.train.Example's exact bytes, parse_*example (eager and in a
traced Dataset.map), TensorProto bytes, decode_raw / decode_csv / decode_compressed,
matching_files, and damaged inputs giving TF's errors."""
import gzip
import zlib

import numpy as np
import pytest

import eagerflow as tf

# TensorFlow 2.21's bytes: Example {x: float [1.5, -2], id: int64 [7], name: bytes [b"cat"]}
# (deterministic), and a TFRecordWriter file holding b"hello", b"", that Example.
EXAMPLE = bytes.fromhex("0a310a0b0a02696412051a030a01070a0f0a046e616d6512070a050a036361740a110a0178120c120a0a080000c03f000000c0")
RECORDS = bytes.fromhex(
    "0500000000000000eab2043e68656c6c6fbb1f1c19000000000000000029039807d8ea82a233000000000000000ca720560a310a0b0a0269641205"
    "1a030a01070a0f0a046e616d6512070a050a036361740a110a0178120c120a0a080000c03f000000c0545e1153")
GZIP = bytes.fromhex("1f8b080000000000000363658080579b58ec32527372f277cbcb48b2220996e717e5a4e8fac92f0500f49812152a000000")


def make_example(tft):
    return tft.Example(features=tft.Features(feature={
        "x": tft.Feature(float_list=tft.FloatList(value=[1.5, -2.0])),
        "id": tft.Feature(int64_list=tft.Int64List(value=[7])),
        "name": tft.Feature(bytes_list=tft.BytesList(value=[b"cat"]))}))


def read_all(ds):
    return [r.numpy() for r in ds]


# ---------------------------------------------------------------- TFRecords
def test_writer_writes_tensorflows_bytes(tmp_path):
    p = tmp_path / "a.rec"
    with tf.io.TFRecordWriter(str(p)) as w:
        w.write(b"hello")
        w.write("")
        w.write(make_example(tf.train).SerializeToString())
    assert p.read_bytes() == RECORDS


def test_reads_a_file_tensorflow_wrote(tmp_path):
    p = tmp_path / "tf.rec"
    p.write_bytes(RECORDS)
    assert read_all(tf.data.TFRecordDataset(str(p))) == [b"hello", b"", EXAMPLE]
    g = tmp_path / "tf.gz"
    g.write_bytes(GZIP)
    assert read_all(tf.data.TFRecordDataset([str(g)], compression_type="GZIP")) == [b"hello", b"world"]


@pytest.mark.parametrize("kind", ["", "GZIP", "ZLIB"])
def test_round_trip_with_compression(tmp_path, kind):
    recs = [bytes([i % 251]) * (i * 37) for i in range(60)]
    paths = []
    for k in range(2):
        p = str(tmp_path / f"r{k}.rec")
        with tf.io.TFRecordWriter(p, tf.io.TFRecordOptions(compression_type=kind)) as w:
            for r in recs[k::2]:
                w.write(r)
        paths.append(p)
    got = read_all(tf.data.TFRecordDataset(paths, compression_type=kind))
    assert got == recs[0::2] + recs[1::2]
    raw = open(paths[0], "rb").read()
    if kind == "GZIP":
        raw = gzip.decompress(raw)
    elif kind == "ZLIB":
        raw = zlib.decompress(raw)
    assert raw[:8] == (0).to_bytes(8, "little")  # the first record is empty: framing is under the compression


def test_damaged_records_raise_data_loss(tmp_path):
    p = tmp_path / "bad.rec"
    bad = bytearray(RECORDS)
    bad[14] ^= 1
    p.write_bytes(bytes(bad))
    with pytest.raises(tf.errors.DataLossError, match="corrupted record at 0"):
        read_all(tf.data.TFRecordDataset(str(p)))
    p.write_bytes(RECORDS[:-2])
    it = iter(tf.data.TFRecordDataset(str(p)))
    assert next(it).numpy() == b"hello"
    assert next(it).numpy() == b""
    with pytest.raises(tf.errors.DataLossError, match="truncated record at 37"):
        next(it)
    huge = (1 << 62).to_bytes(8, "little")
    p.write_bytes(huge + RECORDS[8:40])  # a CRC that does not match the huge length
    with pytest.raises(tf.errors.DataLossError):
        read_all(tf.data.TFRecordDataset(str(p)))
    with pytest.raises(tf.errors.NotFoundError):
        tf.data.TFRecordDataset(str(tmp_path / "missing.rec"))
    with pytest.raises(ValueError):
        tf.io.TFRecordOptions(compression_type="LZ4")


# ---------------------------------------------------------------- tf.train.Example
def test_example_bytes_and_access():
    ex = make_example(tf.train)
    assert ex.SerializeToString() == EXAMPLE
    back = tf.train.Example.FromString(EXAMPLE)
    assert back == ex
    assert back.features.feature["x"].float_list.value == [1.5, -2.0]
    assert back.features.feature["id"].int64_list.value[0] == 7
    assert back.features.feature["name"].WhichOneof("kind") == "bytes_list"
    m = tf.train.Example()
    m.ParseFromString(EXAMPLE)
    assert m == ex
    built = tf.train.Example()
    built.features.feature["x"].float_list.value.extend([1.5, -2.0])
    assert built.features.feature["x"].SerializeToString() == bytes.fromhex("120a0a080000c03f000000c0")
    assert tf.train.FloatList(value=[0.1]).value[0] == np.float32(0.1)
    with pytest.raises(TypeError):
        tf.train.BytesList(value=["str"])
    with pytest.raises(ValueError):
        tf.train.Int64List(value=[2 ** 63])


def test_sequence_example_bytes():
    f = lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v))  # noqa: E731
    s = tf.train.SequenceExample(
        context=tf.train.Features(feature={"a": f([2.0])}),
        feature_lists=tf.train.FeatureLists(feature_list={
            "s": tf.train.FeatureList(feature=[f([1.0]), f([2.0, 3.0]), tf.train.Feature(int64_list=tf.train.Int64List(value=[5]))]),
            "r": tf.train.FeatureList()}))
    want = bytes.fromhex("0a0f0a0d0a0161120812060a0400000040122d0a050a017212000a240a0173121f0a0812060a040000803f0a0c120a0a08"
                         "00000040000040400a051a030a0105")
    assert s.SerializeToString() == want
    assert tf.train.SequenceExample.FromString(want) == s


@pytest.mark.parametrize("bad", [EXAMPLE[:-3], b"\x0a\xff\xff\xff\xff\x0f", b"\x0a" * 300, b"\x0a\x80" + b"\x80" * 10 + b"\x01"])
def test_hostile_example_bytes(bad):
    with pytest.raises(Exception) as e:
        tf.train.Example.FromString(bad)
    assert "parsing" in str(e.value).lower() or "decode" in type(e.value).__name__.lower()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
        tf.io.parse_single_example(bad, {"x": tf.io.VarLenFeature(tf.float32)})


# ---------------------------------------------------------------- parsing
FEATURES = {"x": tf.io.FixedLenFeature([2], tf.float32), "id": tf.io.FixedLenFeature([], tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string), "m": tf.io.FixedLenFeature([2], tf.int64, default_value=[3, 4])}


def test_parse_single_example():
    r = tf.io.parse_single_example(EXAMPLE, FEATURES)
    np.testing.assert_array_equal(r["x"].numpy(), np.array([1.5, -2], np.float32))
    assert r["id"].numpy() == 7 and r["id"].dtype == tf.int64
    assert r["name"].numpy() == b"cat"
    np.testing.assert_array_equal(r["m"].numpy(), [3, 4])
    v = tf.io.parse_single_example(EXAMPLE, {"x": tf.io.VarLenFeature(tf.float32), "r": tf.io.RaggedFeature(tf.float32)})
    np.testing.assert_array_equal(v["x"].indices.numpy(), [[0], [1]])
    np.testing.assert_array_equal(v["x"].dense_shape.numpy(), [2])
    np.testing.assert_array_equal(v["r"].numpy(), np.zeros([0], np.float32))


def test_parse_example_batch():
    other = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[5.0, 6.0, 7.0])),
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"dog"]))})).SerializeToString()
    r = tf.io.parse_example([EXAMPLE, other], {"x": tf.io.VarLenFeature(tf.float32), "id": tf.io.FixedLenFeature([], tf.int64),
                                               "name": tf.io.RaggedFeature(tf.string),
                                               "s": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True)})
    np.testing.assert_array_equal(r["x"].indices.numpy(), [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    np.testing.assert_array_equal(r["x"].values.numpy(), [1.5, -2, 5, 6, 7])
    np.testing.assert_array_equal(r["x"].dense_shape.numpy(), [2, 3])
    np.testing.assert_array_equal(r["id"].numpy(), [7, 1])
    assert r["name"].to_list() == [[b"cat"], [b"dog"]]
    assert r["s"].shape == (2, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Feature: nope .* is required"):
        tf.io.parse_example([EXAMPLE], {"nope": tf.io.FixedLenFeature([], tf.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Data types don't match"):
        tf.io.parse_example([EXAMPLE], {"id": tf.io.FixedLenFeature([], tf.float32)})


def test_parse_sequence_example():
    f = lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v))  # noqa: E731
    s = tf.train.SequenceExample(
        context=tf.train.Features(feature={"c": f([2.0])}),
        feature_lists=tf.train.FeatureLists(feature_list={"s": tf.train.FeatureList(feature=[f([1.0]), f([2.0])]),
                                                          "v": tf.train.FeatureList(feature=[f([1.0]), f([2.0, 3.0])])}))
    b = s.SerializeToString()
    ctx, seq = tf.io.parse_single_sequence_example(
        b, context_features={"c": tf.io.FixedLenFeature([], tf.float32)},
        sequence_features={"s": tf.io.FixedLenSequenceFeature([], tf.float32), "v": tf.io.VarLenFeature(tf.float32)})
    assert ctx["c"].numpy() == 2.0
    np.testing.assert_array_equal(seq["s"].numpy(), [1, 2])
    np.testing.assert_array_equal(seq["v"].indices.numpy(), [[0, 0], [1, 0], [1, 1]])
    np.testing.assert_array_equal(seq["v"].dense_shape.numpy(), [2, 2])
    short = tf.train.SequenceExample(feature_lists=tf.train.FeatureLists(feature_list={
        "s": tf.train.FeatureList(feature=[f([4.0])])})).SerializeToString()
    ctx, seq, lengths = tf.io.parse_sequence_example(
        [b, short], sequence_features={"s": tf.io.FixedLenSequenceFeature([], tf.float32)})
    np.testing.assert_array_equal(seq["s"].numpy(), [[1, 2], [4, 0]])
    np.testing.assert_array_equal(lengths["s"].numpy(), [2, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="'s' is required"):
        tf.io.parse_single_sequence_example(tf.train.SequenceExample().SerializeToString(),
                                            sequence_features={"s": tf.io.FixedLenSequenceFeature([], tf.float32)})


def test_parse_in_a_traced_dataset_map(tmp_path):
    p = str(tmp_path / "ex.rec")
    with tf.io.TFRecordWriter(p) as w:
        for i in range(5):
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i * i]))})).SerializeToString())
    spec = {"x": tf.io.FixedLenFeature([2], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(p).map(lambda s: tf.io.parse_single_example(s, spec)).batch(5)
    b = next(iter(ds))
    np.testing.assert_array_equal(b["x"].numpy(), [[i, i + 0.5] for i in range(5)])
    np.testing.assert_array_equal(b["y"].numpy(), [i * i for i in range(5)])
    # Batch first, then parse: the batched op in the graph.
    ds2 = tf.data.TFRecordDataset(p).batch(2).map(lambda s: tf.io.parse_example(s, spec))
    np.testing.assert_array_equal(np.concatenate([e["y"].numpy() for e in ds2]), [i * i for i in range(5)])


# ---------------------------------------------------------------- tensors and text
@pytest.mark.parametrize("value", [np.array([[1.5, 2], [3, 4]], np.float32), np.arange(6, dtype=np.int64).reshape(2, 3),
                                   np.array([True, False]), np.zeros([0, 3], np.float32), np.array(3.25),
                                   np.array([1, 255], np.uint8), np.array([b"a", b"bc"], dtype=object)])
def test_serialize_parse_tensor(value):
    t = tf.constant(value)
    s = tf.io.serialize_tensor(t)
    back = tf.io.parse_tensor(s, t.dtype)
    assert back.dtype == t.dtype and back.shape == t.shape
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_tensor_proto_bytes_are_tensorflows():
    assert tf.io.serialize_tensor(tf.constant([[1.5, 2], [3, 4]])).numpy() == bytes.fromhex(
        "08011208120208021202080222100000c03f000000400000404000008040")
    assert tf.io.serialize_tensor(tf.constant(True)).numpy() == bytes.fromhex("080a1200220101")
    assert tf.io.serialize_tensor(tf.constant(b"x")).numpy() == bytes.fromhex("08071200420178")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
        tf.io.parse_tensor(tf.io.serialize_tensor(tf.constant(1.0)), tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_tensor(b"\xff\xff", tf.int32)


def test_decode_raw():
    r = tf.io.decode_raw([b"\x01\x00\x02\x00", b"\x03\x00\x04\x00"], tf.int16)
    np.testing.assert_array_equal(r.numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(tf.io.decode_raw(b"\x00\x01", tf.int16, little_endian=False).numpy(), [1])
    np.testing.assert_array_equal(tf.io.decode_raw([b"\x01\x00\x02", b"\x03"], tf.int16, fixed_length=4).numpy(), [[1, 2], [3, 0]])
    f = np.array([1.5, -2], np.float32)
    np.testing.assert_array_equal(tf.io.decode_raw(f.tobytes(), tf.float32).numpy(), f)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
        tf.io.decode_raw([b"\x01\x00\x02", b"\x03"], tf.uint8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a multiple of 2"):
        tf.io.decode_raw([b"\x01\x00\x02"], tf.int16)


def test_decode_csv():
    r = tf.io.decode_csv(['1,"a,b", 2.5,', "3,x,4,7"], [[0], [""], [0.0], tf.constant([9], tf.int64)])
    np.testing.assert_array_equal(r[0].numpy(), [1, 3])
    assert list(r[1].numpy()) == [b"a,b", b"x"]
    np.testing.assert_array_equal(r[2].numpy(), np.array([2.5, 4], np.float32))
    np.testing.assert_array_equal(r[3].numpy(), [9, 7])
    assert r[0].dtype == tf.int32 and r[3].dtype == tf.int64
    r = tf.io.decode_csv(["1,,3"], [[0], [5], [0.0]], na_value="3")
    assert [x.numpy()[0] for x in r] == [1, 5, 0.0]
    r = tf.io.decode_csv(["1,2,3"], [[0], [0]], select_cols=[0, 2])
    assert [x.numpy()[0] for x in r] == [1, 3]
    assert tf.io.decode_csv(['"a""b",1'], [[""], [0]])[0].numpy()[0] == b'a"b'
    assert tf.io.decode_csv(['"a",1'], [[""], [0]], use_quote_delim=False)[0].numpy()[0] == b'"a"'
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 3 fields but have 2 in record 0"):
        tf.io.decode_csv(["1,2"], [[0], [""], [0.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid int32: a"):
        tf.io.decode_csv(["a,b,c"], [[0], [""], [0.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Field 1 is required"):
        tf.io.decode_csv(["1,,2"], [[0], tf.constant([], tf.int32), [0.0]])


def test_decode_compressed_and_matching_files(tmp_path):
    r = tf.io.decode_compressed([zlib.compress(b"hello"), zlib.compress(b"")], "ZLIB")
    assert list(r.numpy()) == [b"hello", b""]
    assert tf.io.decode_compressed(gzip.compress(b"hi"), "GZIP").numpy() == b"hi"
    assert tf.io.decode_compressed(b"raw").numpy() == b"raw"
    with pytest.raises(tf.errors.DataLossError):
        tf.io.decode_compressed(b"raw", "ZLIB")
    for n in ["b.txt", "a.txt", "c.dat"]:
        (tmp_path / n).write_text("x")
    got = tf.io.matching_files(str(tmp_path / "*.txt")).numpy()
    assert list(got) == [str(tmp_path / "a.txt").encode(), str(tmp_path / "b.txt").encode()]
    assert tf.io.matching_files(str(tmp_path / "*.none")).shape == (0,)


def test_sparse_serialization_is_tensorflows():
    sp = tf.sparse.SparseTensor([[0, 1], [2, 0]], [1.5, 2.0], [3, 4])
    s = tf.io.serialize_sparse(sp).numpy()
    assert [x.hex() for x in s] == [
        "08091208120208021202080222200000000000000000010000000000000002000000000000000000000000000000",
        "080112041202080222080000c03f00000040", "0809120412020802221003000000000000000400000000000000"]
    m = tf.io.serialize_many_sparse(sp)
    assert m.shape == (3, 3)
    assert [x.hex() for x in m.numpy()[1]] == ["08091206120012020801", "080112021200", "080912041202080122080400000000000000"]
    d = tf.io.deserialize_many_sparse(m, tf.float32)
    np.testing.assert_array_equal(d.indices.numpy(), [[0, 1], [2, 0]])
    np.testing.assert_array_equal(d.values.numpy(), [1.5, 2.0])
    np.testing.assert_array_equal(d.dense_shape.numpy(), [3, 4])
    a = tf.io.serialize_sparse(tf.sparse.SparseTensor([[0], [2]], [1.0, 2.0], [5]))
    b = tf.io.serialize_sparse(tf.sparse.SparseTensor([[1]], [3.0], [2]))
    d = tf.io.deserialize_many_sparse(tf.stack([a, b]), tf.float32)
    np.testing.assert_array_equal(d.indices.numpy(), [[0, 0], [0, 2], [1, 1]])
    np.testing.assert_array_equal(d.dense_shape.numpy(), [2, 5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requested SparseTensor of type int32"):
        tf.io.deserialize_many_sparse(m, tf.int32)


def test_sparse_feature():
    ex = tf.train.Example(features=tf.train.Features(feature={
        "ix": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 1])),
        "v": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0]))})).SerializeToString()
    f = {"sp": tf.io.SparseFeature("ix", "v", tf.float32, 5)}
    r = tf.io.parse_single_example(ex, f)["sp"]
    np.testing.assert_array_equal(r.indices.numpy(), [[1], [3]])
    np.testing.assert_array_equal(r.values.numpy(), [2.0, 1.0])
    np.testing.assert_array_equal(r.dense_shape.numpy(), [5])
    r = tf.io.parse_example([ex, ex], f)["sp"]
    np.testing.assert_array_equal(r.indices.numpy(), [[0, 1], [0, 3], [1, 1], [1, 3]])
    np.testing.assert_array_equal(r.dense_shape.numpy(), [2, 5])


def test_decode_raw_in_a_traced_dataset_map(tmp_path):
    p = str(tmp_path / "img.rec")
    images = np.arange(3 * 4, dtype=np.uint8).reshape(3, 4) * 20
    with tf.io.TFRecordWriter(p) as w:
        for im in images:
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[im.tobytes()]))})).SerializeToString())

    def parse(s):
        raw = tf.io.parse_single_example(s, {"image_raw": tf.io.FixedLenFeature([], tf.string)})["image_raw"]
        return tf.cast(tf.io.decode_raw(raw, tf.uint8), tf.float32) / 255.0

    got = np.stack([e.numpy() for e in tf.data.TFRecordDataset(p).map(parse)])
    np.testing.assert_allclose(got, images.astype(np.float32) / 255.0, rtol=1e-6)
    assert tf.io.decode_raw(images[0].tobytes(), tf.uint8).dtype == tf.uint8


def test_parallel_reads_interleave_as_tensorflow(tmp_path):
    paths = []
    for k in range(2):
        paths.append(str(tmp_path / f"p{k}.rec"))
        with tf.io.TFRecordWriter(paths[-1]) as w:
            for i in range(3):
                w.write(b"%d-%d" % (k, i))
    got = read_all(tf.data.TFRecordDataset(paths, num_parallel_reads=2))
    assert got == [b"0-0", b"1-0", b"0-1", b"1-1", b"0-2", b"1-2"]  # TF 2.21's order
