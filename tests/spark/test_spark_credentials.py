"""``accessKey`` / ``secretKey`` for the reader and the writer: parsed together, signed, never shown."""

from __future__ import annotations

import pytest
import trio

from rocketmq_py._transport._hooks import ACCESS_KEY, SIGNATURE, acl_signature
from rocketmq_py.protocol import RequestCode
from rocketmq_py.testing._fake_broker import FakeBroker
from spark_connector._errors import SparkOptionError
from spark_connector._metadata import list_topics, run_with_api
from spark_connector._options import parse_read_options
from spark_connector._sink import parse_sink_options

SECRET = "s3cr3t-value-x"


def test_reader_takes_both_keys_and_hides_the_secret() -> None:
    options = parse_read_options(
        {"namesrv": "127.0.0.1:9876", "topic": "t", "accessKey": "ak-1", "secretKey": SECRET}, streaming=False
    )
    assert (options.access_key, options.secret_key) == ("ak-1", SECRET)
    assert "accesskey" not in options.extra
    assert "secretkey" not in options.extra
    assert SECRET not in repr(options)
    plain = parse_read_options({"namesrv": "127.0.0.1:9876", "topic": "t"}, streaming=False)
    assert (plain.access_key, plain.secret_key) == (None, None)


@pytest.mark.parametrize("given", [{"accessKey": "ak-1"}, {"secretKey": SECRET}])
def test_one_key_alone_is_refused_without_showing_the_secret(given: dict[str, str]) -> None:
    with pytest.raises(SparkOptionError) as reader_error:
        parse_read_options({"namesrv": "127.0.0.1:9876", "topic": "t", **given}, streaming=False)
    with pytest.raises(SparkOptionError) as sink_error:
        parse_sink_options({"namesrv": "127.0.0.1:9876", **given})
    for error in (reader_error.value, sink_error.value):
        assert "accessKey and secretKey together" in str(error)
        assert SECRET not in str(error)


def test_writer_takes_both_keys_and_hides_the_secret() -> None:
    options = parse_sink_options({"namesrv": "127.0.0.1:9876", "AccessKey": "ak-1", "SECRETKEY": SECRET})
    assert (options.access_key, options.secret_key) == ("ak-1", SECRET)
    assert SECRET not in repr(options)


async def test_planning_requests_are_signed_with_the_options_keys() -> None:
    async with FakeBroker(broker_name="namesrv") as namesrv:
        namesrv.on_reply(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, body=b'{"topicList":["t"]}')
        options = parse_read_options(
            {"namesrv": namesrv.address, "topic": "t", "accessKey": "ak-1", "secretKey": SECRET},
            streaming=False,
        )
        topics = await trio.to_thread.run_sync(
            lambda: run_with_api(options, lambda api: list_topics(api, options))
        )
        assert topics == ["t"]
        (request,) = namesrv.requests(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    fields = dict(request.ext_fields)
    assert fields[ACCESS_KEY] == "ak-1"
    signature = fields.pop(SIGNATURE)
    assert signature == acl_signature(SECRET, fields, request.body)
    assert SECRET not in str(request.ext_fields)
