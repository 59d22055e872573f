"""The registry's errors: Confluent Schema Registry's HTTP statuses, error codes and messages.

Every failure the service reports is a :class:`RegistryError` carrying the HTTP status, the
error code and the message of Confluent's body ``{"error_code": ..., "message": ...}``; the
API translates it in one place. The constructors below word the messages as Confluent's
``Errors`` class and exception types do, so clients that match on them keep working.
"""

from __future__ import annotations

__all__ = [
    "INCOMPATIBLE_SCHEMA",
    "INVALID_COMPATIBILITY_LEVEL",
    "INVALID_MODE",
    "INVALID_SCHEMA",
    "INVALID_VERSION",
    "OPERATION_NOT_PERMITTED",
    "REFERENCE_EXISTS",
    "RegistryError",
]

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_MODE_NOT_CONFIGURED = 40409
# Confluent answered 409 with error_code 409 for years (and Karapace does); newer releases
# say 40901. Clients look at the HTTP status.
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
ID_DOES_NOT_MATCH = 42207
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
REQUEST_FORWARDING_FAILED = 50003
UNKNOWN_LEADER = 50004


class RegistryError(Exception):
    """A failure the API answers with ``http_status`` and ``{"error_code", "message"}``."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        """The JSON body Confluent answers."""
        return {"error_code": self.error_code, "message": self.message}

    def __repr__(self) -> str:
        return f"RegistryError({self.http_status}, {self.error_code}, {self.message!r})"


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    if schema_id is None:
        return RegistryError(404, SCHEMA_NOT_FOUND, "Schema not found")
    return RegistryError(404, SCHEMA_NOT_FOUND, f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404,
        SUBJECT_SOFT_DELETED,
        f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404,
        SUBJECT_NOT_SOFT_DELETED,
        f"Subject '{subject}' was not deleted first before being permanently deleted",
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        SCHEMA_VERSION_SOFT_DELETED,
        f"Subject '{subject}' Version {version} was soft deleted."
        "Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        SCHEMA_VERSION_NOT_SOFT_DELETED,
        f"Subject '{subject}' Version {version} was not deleted first before being "
        "permanently deleted",
    )


def compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404,
        SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
        f"Subject '{subject}' does not have subject-level compatibility configured",
    )


def mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404,
        SUBJECT_MODE_NOT_CONFIGURED,
        f"Subject '{subject}' does not have subject-level mode configured",
    )


def incompatible(subject: str, messages: list[str]) -> RegistryError:
    details = "[" + ", ".join(messages) + "]"
    return RegistryError(
        409,
        INCOMPATIBLE_SCHEMA,
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
        f"details: {details}",
    )


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, INVALID_SCHEMA, f"Invalid schema {message}")


def invalid_version(version: object) -> RegistryError:
    return RegistryError(
        422,
        INVALID_VERSION,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level() -> RegistryError:
    return RegistryError(
        422,
        INVALID_COMPATIBILITY_LEVEL,
        "Invalid compatibility level. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode() -> RegistryError:
    return RegistryError(
        422, INVALID_MODE, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT."
    )


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, OPERATION_NOT_PERMITTED, message)


def reference_exists(subject: str, version: int) -> RegistryError:
    return RegistryError(
        422,
        REFERENCE_EXISTS,
        "One or more references exist to the schema "
        f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.",
    )


def id_does_not_match(schema_id: int) -> RegistryError:
    return RegistryError(
        422, ID_DOES_NOT_MATCH, f"Overwrite new schema with id {schema_id} is not permitted."
    )


def store_error(message: str) -> RegistryError:
    return RegistryError(500, STORE_ERROR, message)


def operation_timeout(message: str) -> RegistryError:
    return RegistryError(500, OPERATION_TIMEOUT, message)


def unknown_leader(message: str) -> RegistryError:
    return RegistryError(500, UNKNOWN_LEADER, message)
