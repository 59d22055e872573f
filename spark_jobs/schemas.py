"""Confluent-framed keys and values as typed Spark columns, through Weir's schema registry.

``from_confluent(df, registry_url=..., subject="orders-value")`` is Databricks'
``from_avro(col, options)`` for all three of the registry's formats::

    orders = spark.read.format("weir").option(...).option("subscribe", "orders").load()
    typed = from_confluent(orders, registry_url=URL, topic="orders", auth=("viewer", PW))
    typed.select("value.id", "value.amount", "offset")

Theory of operation
-------------------
* **Driver** (:func:`from_confluent`): the subject's schema (its latest version, or the one
  asked for) is fetched once and turned into the column's Spark type
  (``spark_jobs.schema_types``). That schema is the *reader* schema: every record comes out
  in its shape, whatever schema version wrote it.
* **Executors** (:func:`decode_batches`, run by ``mapInArrow``, one Arrow batch at a time):
  each record's framing (``weir.registry.framing``) names the schema that wrote it. The first
  time a Python worker meets an id it fetches that schema (``spark_jobs.registry_client``)
  and builds a :class:`Decoder`, kept in :data:`_decoders` for the worker's life: Avro is
  read by fastavro with the writer's schema resolved to the reader's (Avro's own schema
  resolution: added fields get defaults, removed ones drop), JSON with ``json``, Protobuf
  through a message class built from the registry's ``?format=serialized`` descriptor
  (references and Google's built-in files included) and the record's message indexes.
  The decoded value is fitted to the column's type (``schema_types.conform``).
* **Bad records**: a null key or value is a null column, as in Spark. Bytes that are not
  Confluent-framed, or whose payload does not decode, fail the query with
  :class:`RecordNotDecoded` naming the topic, partition and offset (``mode="FAILFAST"``,
  the default, as Spark's ``from_avro``), or become null (``mode="PERMISSIVE"``). A
  registry that cannot be reached, or an id it does not know, always fails the query.
"""

from __future__ import annotations

import functools
import io
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import DataType, StructField, StructType

from spark_jobs.registry_client import Registered, RegistryAccess, RegistryError
from spark_jobs.schema_types import (
    avro_named_types,
    avro_type,
    conform,
    json_schema_type,
    protobuf_type,
    protobuf_value,
)
from weir.registry.framing import NotFramed, parse_frame

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = [
    "ReaderSchema",
    "RecordNotDecoded",
    "RegistryError",
    "decode_batches",
    "from_confluent",
    "reader_schema",
]

MODES = ("FAILFAST", "PERMISSIVE")


class RecordNotDecoded(ValueError):
    """A record's bytes are not Confluent-framed, or their payload does not decode."""


@dataclass(frozen=True, slots=True)
class ReaderSchema:
    """The schema a column is decoded into: its registry id, format and Spark type."""

    schema_id: int
    schema_type: str
    spark_type: DataType
    message: str | None = None  # PROTOBUF: the message's full name


def reader_schema(
    access: RegistryAccess,
    subject: str,
    *,
    version: int | str = "latest",
    message: str | None = None,
) -> ReaderSchema:
    """``subject``'s schema (``version``) as the Spark type of the column it decodes into;
    for Protobuf, the file's first message unless ``message`` names another."""
    found = access.version(subject, version)
    if found.schema_type == "AVRO":
        named: dict[str, Any] = {}
        for ref in access.references(found.references).values():
            named.update(avro_named_types(json.loads(ref.schema)))
        spark_type, _ = avro_type(json.loads(found.schema), named)
        return ReaderSchema(found.schema_id, "AVRO", spark_type)
    if found.schema_type == "JSON":
        spark_type, _ = json_schema_type(json.loads(found.schema))
        return ReaderSchema(found.schema_id, "JSON", spark_type)
    if found.schema_type == "PROTOBUF":
        pool, file = _protobuf_pool(access, found.schema_id)
        if message is None:
            if not file.message_type:
                raise ValueError(f"subject {subject!r}'s Protobuf schema declares no message")
            desc = _message_at(pool, file, (0,))
        else:
            desc = pool.FindMessageTypeByName(message)
        return ReaderSchema(found.schema_id, "PROTOBUF", protobuf_type(desc), desc.full_name)
    raise ValueError(f"subject {subject!r} has a {found.schema_type} schema; no Spark type")


def from_confluent(
    df: DataFrame,
    column: str = "value",
    *,
    registry_url: str,
    subject: str | None = None,
    topic: str | None = None,
    version: int | str = "latest",
    message: str | None = None,
    auth: tuple[str, str] | None = None,
    token: str | None = None,
    mode: str = "FAILFAST",
    output: str | None = None,
) -> DataFrame:
    """``df`` with the Confluent-framed ``column`` decoded into a typed column.

    ``subject`` names the schema whose shape the column takes (default
    ``<topic>-<column>``, Confluent's TopicNameStrategy); ``version`` picks one of its
    versions; ``message`` a Protobuf message other than the file's first. ``auth`` is HTTP
    Basic, ``token`` Weir's API token. ``mode`` is ``FAILFAST`` (a record that is not
    Confluent-framed fails the query, naming its offset) or ``PERMISSIVE`` (it is null).
    The decoded column replaces ``column``, or is added as ``output``.
    """
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if subject is None:
        if topic is None:
            raise ValueError("from_confluent needs subject= or topic= (subject <topic>-<column>)")
        subject = f"{topic}-{column}"
    if column not in df.columns:
        raise ValueError(f"no column {column!r} in {df.columns}")
    access = RegistryAccess(registry_url, auth=auth, token=token)
    reader = reader_schema(access, subject, version=version, message=message)
    target = output or column
    fields = [f for f in df.schema.fields if f.name != target or target == column]
    decoded = StructField(target, reader.spark_type, True)
    if target == column:
        out = StructType([decoded if f.name == column else f for f in fields])
    else:
        out = StructType([*fields, decoded])
    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    arrow_type = _arrow_type(reader.spark_type, timezone)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from decode_batches(
            batches, access, reader, column=column, output=target, mode=mode, arrow=arrow_type
        )

    return df.mapInArrow(run, out)


def _arrow_type(spark_type: DataType, timezone: str) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type, timezone=timezone)


def decode_batches(
    batches: Iterator[pa.RecordBatch],
    access: RegistryAccess,
    reader: ReaderSchema,
    *,
    column: str,
    output: str,
    mode: str,
    arrow: pa.DataType,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: each batch with ``column`` decoded into ``output``."""
    import pyarrow as pa

    for batch in batches:
        raw = batch.column(column).to_pylist()
        where = _locator(batch)
        values = [
            decode_one(access, reader, data, mode, functools.partial(where, i))
            for i, data in enumerate(raw)
        ]
        decoded = pa.array(values, type=arrow)
        names = list(batch.schema.names)
        arrays = list(batch.columns)
        if output in names:
            arrays[names.index(output)] = decoded
        else:
            names.append(output)
            arrays.append(decoded)
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _locator(batch: pa.RecordBatch) -> Callable[[int], str]:
    """How an error names row ``i``: its topic, partition and offset when the batch has them."""
    names = set(batch.schema.names)
    if not {"topic", "partition", "offset"} <= names:
        return lambda i: f"row {i} of a batch"
    topics, partitions, offsets = (batch.column(n) for n in ("topic", "partition", "offset"))
    return lambda i: (
        f"topic {topics[i].as_py()} partition {partitions[i].as_py()} offset {offsets[i].as_py()}"
    )


def decode_one(
    access: RegistryAccess,
    reader: ReaderSchema,
    data: bytes | None,
    mode: str,
    where: Callable[[], str] = lambda: "a record",
) -> Any:
    """One record's bytes as the column's value (see the module docstring for errors)."""
    if data is None:
        return None
    try:
        frame = parse_frame(data, protobuf=reader.schema_type == "PROTOBUF")
    except NotFramed as exc:
        return _bad(mode, f"{where()} is not Confluent-framed: {exc}")
    decoder = decoder_for(access, reader, frame.schema_id)
    try:
        return conform(decoder(frame.payload, frame.indexes), reader.spark_type)
    except RegistryError:
        raise
    except Exception as exc:  # fastavro, json and protobuf each raise their own errors
        message = f"{where()} (schema id {frame.schema_id}) does not decode: {exc}"
        return _bad(mode, message)


def _bad(mode: str, message: str) -> None:
    if mode == "FAILFAST":
        raise RecordNotDecoded(message + " (mode PERMISSIVE makes it null)")
    return None


# -- decoders, per Python worker ------------------------------------------------------------

Decoder = Callable[[bytes, tuple[int, ...]], Any]
_decoders: dict[tuple[str, int, int, str | None], Decoder] = {}
_decoders_lock = threading.Lock()


def decoder_for(access: RegistryAccess, reader: ReaderSchema, writer_id: int) -> Decoder:
    """The decoder of records written with ``writer_id``, built once per worker."""
    key = (access.url, writer_id, reader.schema_id, reader.message)
    with _decoders_lock:
        found = _decoders.get(key)
    if found is None:
        found = _build_decoder(access, reader, writer_id)
        with _decoders_lock:
            _decoders[key] = found
    return found


def _build_decoder(access: RegistryAccess, reader: ReaderSchema, writer_id: int) -> Decoder:
    if reader.schema_type == "PROTOBUF":
        return _protobuf_decoder(access, writer_id)
    writer = access.schema_by_id(writer_id)
    if writer.schema_type != reader.schema_type:
        raise RegistryError(
            f"schema id {writer_id} is {writer.schema_type}, the column's is {reader.schema_type}"
        )
    if writer.schema_type == "JSON":
        return lambda payload, _: json.loads(payload)
    return _avro_decoder(access, writer, reader)


def _avro_decoder(access: RegistryAccess, writer: Registered, reader: ReaderSchema) -> Decoder:
    from fastavro import parse_schema, schemaless_reader

    def parsed(found: Registered) -> Any:
        named: dict[str, Any] = {}
        for ref in access.references(found.references).values():
            parse_schema(json.loads(ref.schema), named_schemas=named)
        return parse_schema(json.loads(found.schema), named_schemas=named)

    writer_schema = parsed(writer)
    # The same id needs no resolution (fastavro's fast path); another resolves to the reader.
    same = writer.schema_id == reader.schema_id
    reader_schema_ = None if same else parsed(access.schema_by_id(reader.schema_id))

    def decode(payload: bytes, _: tuple[int, ...]) -> Any:
        return schemaless_reader(io.BytesIO(payload), writer_schema, reader_schema_)

    return decode


def _protobuf_decoder(access: RegistryAccess, writer_id: int) -> Decoder:
    from google.protobuf import message_factory

    pool, file = _protobuf_pool(access, writer_id)
    classes: dict[tuple[int, ...], Any] = {}

    def decode(payload: bytes, indexes: tuple[int, ...]) -> Any:
        cls = classes.get(indexes)
        if cls is None:
            desc = _message_at(pool, file, indexes)
            cls = classes[indexes] = message_factory.GetMessageClass(desc)
        return protobuf_value(cls.FromString(payload))

    return decode


def _message_at(pool: Any, file: Any, indexes: tuple[int, ...]) -> Any:
    """The message the framing's indexes name: a top-level message of ``file`` (a
    ``FileDescriptorProto``: its declaration order is the index order), then nested ones."""
    try:
        name = file.message_type[indexes[0]].name
        desc = pool.FindMessageTypeByName(f"{file.package}.{name}" if file.package else name)
        for index in indexes[1:]:
            desc = desc.nested_types[index]
    except IndexError:
        raise ValueError(f"message indexes {list(indexes)} name no message") from None
    return desc


def _protobuf_pool(access: RegistryAccess, schema_id: int) -> tuple[Any, str]:
    """A descriptor pool holding schema ``schema_id``'s file, its references and the
    built-in files it imports; and the file's ``FileDescriptorProto``."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    found = access.schema_by_id(schema_id, serialized=True)
    files: dict[str, Any] = {}
    for name, ref in access.references(found.references, serialized=True).items():
        fdp = descriptor_pb2.FileDescriptorProto.FromString(_b64(ref.schema))
        fdp.name = name  # imported by this path, whatever the file called itself
        files[name] = fdp
    top = descriptor_pb2.FileDescriptorProto.FromString(_b64(found.schema))
    if not top.name or top.name in files:
        top.name = f"weir-schema-{schema_id}.proto"
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(fdp: Any) -> None:
        if fdp.name in added:
            return
        added.add(fdp.name)
        for dep in fdp.dependency:
            if dep in files:
                add(files[dep])
            else:
                builtin = _builtin_file(dep)
                if builtin is None:
                    raise RegistryError(f"schema id {schema_id} imports {dep!r}, not referenced")
                add(builtin)
        pool.Add(fdp)

    add(top)
    return pool, top


def _builtin_file(name: str) -> Any:
    """A file every Protobuf client has built in (``google/protobuf/timestamp.proto``,
    ``google/type/date.proto``...), from the generated module that ships it."""
    import importlib

    from google.protobuf import descriptor_pb2

    module_name = name.removesuffix(".proto").replace("/", ".") + "_pb2"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)
