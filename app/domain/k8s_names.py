"""Kubernetes object names checked as the API server checks them, with its messages.

Follows ``staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go``
(``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``MaxLenError``, ``RegexError``),
``staging/src/k8s.io/apimachinery/pkg/api/validation/generic.go`` (``NameIsDNSSubdomain``,
``NameIsDNSLabel``, ``maskTrailingDash``), ``.../api/validation/objectmeta.go``
(``ValidateObjectMetaAccessor``: generateName, then name, then namespace) and
``pkg/apis/core/validation/validation.go`` (``ValidatePodName`` is a DNS-1123 subdomain, a
namespace and a container name are DNS-1123 labels), the same text in 1.35-1.38. Messages are
rendered like ``field.Error.Error()``: ``<path>: Invalid value: "<value>": <detail>`` (the
value in Go's ``%q``), ``<path>: Required value[: <detail>]``; several details for one field
are joined as the API server's aggregate joins them (``", "``).

Lengths are counted in bytes of UTF-8, as Go's ``len`` counts them. The patterns are matched
against the whole text (a trailing newline is not "the end", unlike Python's ``$``).

Pod UIDs: the API server assigns every pod a 36-character RFC 4122 UUID and validates none a
client sends, but a UID names the pod's directory under ``/var/lib/kubelet/pods`` and keys
every checkpoint entry. Numascope therefore takes a manifest's ``metadata.uid`` only when it
could be such a name: at most 128 bytes of letters, digits, ``-``, ``_`` and ``.``, starting
and ending with a letter or digit (``check_uid``; UUIDs and readable test UIDs like
``budget-three-uid`` pass).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from app.domain.golang.strconv import go_quote

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
UID_MAX_LENGTH = 128

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_LABEL_RE = re.compile(_LABEL_FMT)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
_UID_FMT = "[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?"
_UID_RE = re.compile(_UID_FMT)

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_UID_MSG = (
    "a pod UID must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character"
)


class InvalidNameError(ValueError):
    """A name fails its rule. ``field`` is its path (``metadata.name``), ``detail`` the text
    after the path (``Invalid value: "a/b": a lowercase RFC 1123 subdomain ...``)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


def max_len_error(length: int) -> str:
    """``MaxLenError``."""
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``: the message, the examples and the pattern (Go's spacing kept)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: what is wrong with ``value`` as a label (empty: nothing)."""
    errs = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if _LABEL_RE.fullmatch(value) is None:
        if _SUBDOMAIN_RE.fullmatch(value) is not None:
            errs.append("must not contain dots")  # a subdomain of the right length
        else:
            errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def _length_and_format(
    value: str, max_length: int, pattern: re.Pattern[str], msg: str, fmt: str, *examples: str
) -> list[str]:
    """The two rules of a subdomain or a UID: at most ``max_length`` bytes, and ``pattern``."""
    errs = []
    if _byte_len(value) > max_length:
        errs.append(max_len_error(max_length))
    if pattern.fullmatch(value) is None:
        errs.append(regex_error(msg, fmt, *examples))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``."""
    return _length_and_format(
        value,
        DNS1123_SUBDOMAIN_MAX_LENGTH,
        _SUBDOMAIN_RE,
        _SUBDOMAIN_MSG,
        _SUBDOMAIN_FMT,
        "example.com",
    )


def _mask_trailing_dash(name: str) -> str:
    # As upstream: a generateName ending in '-' is checked with its last two characters
    # replaced by "a" (the random suffix makes the real name end in an alphanumeric).
    return name[:-2] + "a" if name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    """``NameIsDNSSubdomain`` (``ValidatePodName``); ``prefix`` for a generateName."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    """``NameIsDNSLabel`` (``ValidateNamespaceName``)."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def uid_errors(uid: str) -> list[str]:
    """What is wrong with ``uid`` as a pod UID (module docstring)."""
    example = "8a4c6f0e-2b7d-4d1e-9f3a-5c6b7d8e9f01"
    return _length_and_format(uid, UID_MAX_LENGTH, _UID_RE, _UID_MSG, _UID_FMT, example)


def invalid(field: str, value: str, details: Sequence[str]) -> InvalidNameError:
    """One ``field.Invalid`` per detail, joined like the API server's aggregate."""
    bodies = [f"Invalid value: {go_quote(value)}: {d}" for d in details]
    return InvalidNameError(field, f", {field}: ".join(bodies))


def required(field: str, detail: str = "") -> InvalidNameError:
    """``field.Required``."""
    return InvalidNameError(field, f"Required value: {detail}" if detail else "Required value")


def _check(
    value: str, field: str, errors: Callable[[str], list[str]], required_detail: str | None = ""
) -> None:
    """``field.Required`` for an empty ``value`` (``required_detail=None``: no such rule), else
    one ``field.Invalid`` per error of ``errors``."""
    if not value and required_detail is not None:
        raise required(field, required_detail)
    errs = errors(value)
    if errs:
        raise invalid(field, value, errs)


def check_pod_name(name: str, field: str = "metadata.name") -> None:
    _check(name, field, name_is_dns_subdomain, "name or generateName is required")


def check_generate_name(prefix: str, field: str = "metadata.generateName") -> None:
    _check(prefix, field, lambda p: name_is_dns_subdomain(p, prefix=True), None)


def check_namespace(namespace: str, field: str = "metadata.namespace") -> None:
    _check(namespace, field, name_is_dns_label)


def check_container_name(name: str, field: str) -> None:
    """``validateContainerCommon``'s name rule (``spec.containers[0].name``)."""
    _check(name, field, is_dns1123_label)


def check_uid(uid: str, field: str = "metadata.uid") -> None:
    _check(uid, field, uid_errors, None)


def check_subdomain(name: str, field: str) -> None:
    """Any object name that must be a DNS-1123 subdomain (a node's name)."""
    _check(name, field, is_dns1123_subdomain)
