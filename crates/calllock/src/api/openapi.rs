//! The OpenAPI 3.1 document of the JSON API, served at `/api/openapi.json`.
//! Its schemas are JSON Schema (2020-12), so a client — or our tests — can
//! check every answer against them.

use serde_json::{json, Value};

/// The shape of a page cursor (`cursor`, a page's `next`): the start time
/// in Unix seconds, `_`, the call id. Clients treat it as opaque.
pub const CURSOR_PATTERN: &str = "^-?[0-9]+_.+$";

/// A nullable type (OpenAPI 3.1 spells it as a type list).
fn or_null(t: &str) -> Value {
    json!({ "type": [t, "null"] })
}

fn text() -> Value {
    json!({ "type": "string" })
}

/// The document.
pub fn document() -> Value {
    let error_response = |what: &str| {
        json!({
            "description": what,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        })
    };
    let ok = |what: &str, schema: &str| {
        json!({
            "description": what,
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}
        })
    };
    let query = |name: &str, what: &str, schema: Value| json!({"name": name, "in": "query", "required": false, "description": what, "schema": schema});
    let id_param = json!({
        "name": "id", "in": "path", "required": true,
        "description": "The call id (Twilio's CallSid).", "schema": text()
    });
    let errors = |extra: &[(&str, &str)]| {
        let mut m = serde_json::Map::new();
        m.insert("401".into(), error_response("No valid API token."));
        m.insert("503".into(), error_response("The database is unavailable."));
        for (code, what) in extra {
            m.insert((*code).into(), error_response(what));
        }
        m
    };
    let with = |mut m: serde_json::Map<String, Value>, code: &str, v: Value| {
        m.insert(code.into(), v);
        Value::Object(m)
    };
    // A page's `next`: opaque to clients, but never any string.
    let cursor = json!({"type": "string", "pattern": CURSOR_PATTERN});
    // A change made with the session cookie must carry the session's CSRF
    // token (from GET /api/session); with the API token it is not needed.
    let csrf_header = json!({
        "name": "X-CSRF-Token", "in": "header", "required": false,
        "description": "The session's CSRF token (`csrf` of GET /api/session). Required when signed in with the session cookie (else 403); not needed with `Authorization: Bearer`.",
        "schema": {"type": "string", "minLength": 1}
    });
    let summary = json!({
        "type": "object",
        "required": ["call_id", "phone", "started_at", "ended_at", "duration_s", "status", "final_state", "end_call_reason", "booking_status", "urgency", "priority", "revenue_tier", "customer_name", "problem"],
        "additionalProperties": false,
        "properties": {
            "call_id": text(),
            "phone": text(),
            "started_at": {"type": "string", "format": "date-time"},
            "ended_at": {"type": ["string", "null"], "format": "date-time"},
            "duration_s": {"type": ["number", "null"], "minimum": 0},
            "status": {"type": "string", "enum": ["live", "completed", "interrupted"]},
            "final_state": text(),
            "end_call_reason": text(),
            "booking_status": text(),
            "urgency": text(),
            "priority": text(),
            "revenue_tier": text(),
            "customer_name": text(),
            "problem": text(),
        }
    });
    // A call in full: the summary's fields, then its record and transcript.
    let mut detail = summary.clone();
    detail["properties"]["record"] =
        json!({"description": "The post-call record (null until the call has ended)."});
    detail["properties"]["transcript"] = json!({"type": "array", "items": {"type": "object"}});
    for field in ["record", "transcript"] {
        if let Some(r) = detail["required"].as_array_mut() {
            r.push(json!(field));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "CallLock operator API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The calls a CallLock server answered, their records and event logs, and the deliveries waiting in its outbox. Every route needs `Authorization: Bearer <serve.api_token>` or the signed-in operator's session cookie; a change (POST) made with the cookie must also send the session's CSRF token in `X-CSRF-Token` (see GET /api/session)."
        },
        "security": [{"bearer": []}, {"session": []}],
        "paths": {
            "/api/calls": {"get": {
                "operationId": "listCalls",
                "summary": "Calls, newest first, a page at a time.",
                "parameters": [
                    query("final_state", "Only calls that ended in this state (confirm, callback, safety_exit, …).", text()),
                    query("priority", "Only calls of this priority colour (red, green, blue, gray).", text()),
                    query("caller", "Only calls from numbers containing these digits.", text()),
                    query("since", "Only calls started at or after this Unix time (seconds).", json!({"type": "integer"})),
                    query("until", "Only calls started before this Unix time (seconds).", json!({"type": "integer"})),
                    query("status", "Only live, completed or interrupted calls.", json!({"type": "string", "enum": ["live", "completed", "interrupted"]})),
                    query("cursor", "The `next` of the previous page, as given: an opaque token (its parts may change; never build one).", cursor.clone()),
                    query("limit", "Calls per page (default 50).", json!({"type": "integer", "minimum": 1, "maximum": store::MAX_PAGE})),
                ],
                "responses": with(errors(&[("400", "A parameter is wrong (the message names it).")]), "200", ok("A page of calls.", "CallPage")),
            }},
            "/api/calls/{id}": {"get": {
                "operationId": "getCall",
                "summary": "One call: its summary, post-call record and transcript.",
                "parameters": [id_param.clone()],
                "responses": with(errors(&[("400", "Unknown parameters."), ("404", "No such call.")]), "200", ok("The call.", "CallDetail")),
            }},
            "/api/calls/{id}/events": {"get": {
                "operationId": "getCallEvents",
                "summary": "One call's event log, in order (a live call's so far).",
                "parameters": [id_param],
                "responses": with(errors(&[("400", "Unknown parameters."), ("404", "No such call.")]), "200", ok("The events.", "EventLog")),
            }},
            "/api/outbox": {"get": {
                "operationId": "listOutbox",
                "summary": "Deliveries waiting (dashboard records, alerts, callbacks), oldest first.",
                "responses": with(errors(&[("400", "Unknown parameters.")]), "200", ok("What waits.", "Outbox")),
            }},
            "/api/outbox/{id}/retry": {"post": {
                "operationId": "retryOutboxItem",
                "summary": "Attempt a waiting delivery now and say what happened: delivered, or failed (the error and when the worker tries again); 409 when it cannot be attempted now (it waits behind an earlier delivery of its call, or a worker holds it). With a session cookie, send the session's `X-CSRF-Token`.",
                "parameters": [
                    {"name": "id", "in": "path", "required": true, "description": "The outbox item id.", "schema": text()},
                    csrf_header,
                ],
                "responses": with(errors(&[("400", "The id cannot be read."), ("403", "No CSRF token with a session cookie."), ("404", "No such waiting delivery."), ("409", "Not attempted now, and why.")]), "200", ok("Attempted: delivered or failed.", "Retried")),
            }},
            "/api/session": {"get": {
                "operationId": "getSession",
                "summary": "The signed-in operator's session: its CSRF token for changes.",
                "responses": with(errors(&[("404", "An API token has no session.")]), "200", ok("The session.", "Session")),
            }},
            "/api/openapi.json": {"get": {
                "operationId": "openapi",
                "summary": "This document.",
                "responses": with(errors(&[]), "200", json!({"description": "The OpenAPI document.", "content": {"application/json": {"schema": {"type": "object"}}}})),
            }},
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "serve.api_token"},
                "session": {"type": "apiKey", "in": "cookie", "name": crate::operator::COOKIE, "description": "Set by POST /login."}
            },
            "schemas": {
                "Error": {
                    "type": "object", "required": ["error"], "additionalProperties": false,
                    "properties": {"error": text()}
                },
                "CallSummary": summary,
                "CallPage": {
                    "type": "object", "required": ["calls", "next"], "additionalProperties": false,
                    "properties": {
                        "calls": {"type": "array", "items": {"$ref": "#/components/schemas/CallSummary"}},
                        "next": {"type": ["string", "null"], "pattern": CURSOR_PATTERN, "description": "The cursor of the next page (null: this is the last)."},
                    }
                },
                "CallDetail": detail,
                "Event": {
                    "type": "object", "required": ["seq", "at", "kind", "data"], "additionalProperties": false,
                    "properties": {
                        "seq": {"type": "integer"},
                        "at": {"type": "number", "description": "Unix seconds."},
                        "kind": {"type": "string", "description": "The call's log, one event per entry: caller, llm (a message to the LLM), said (an agent line said), agent (an agent line in the transcript), speech_started, speech_finished, interrupted, tool_call, tool_result, state, note, ended; beside it session (the session after it changed) and latency (one answered turn)."},
                        "data": {},
                    }
                },
                "EventLog": {
                    "type": "object", "required": ["call_id", "events"], "additionalProperties": false,
                    "properties": {
                        "call_id": text(),
                        "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
                    }
                },
                "OutboxItem": {
                    "type": "object",
                    "required": ["id", "call_id", "seq", "kind", "target_url", "attempts", "next_attempt_at", "last_error", "created_at", "leased_until"],
                    "additionalProperties": false,
                    "properties": {
                        "id": text(),
                        "call_id": text(),
                        "seq": {"type": "integer"},
                        "kind": text(),
                        "target_url": text(),
                        "attempts": {"type": "integer", "minimum": 0},
                        "next_attempt_at": {"type": "number", "description": "Unix seconds."},
                        "last_error": text(),
                        "created_at": {"type": "number", "description": "Unix seconds."},
                        "leased_until": or_null("number"),
                    }
                },
                "Retried": {
                    "type": "object", "required": ["id", "outcome", "message"], "additionalProperties": false,
                    "properties": {
                        "id": text(),
                        "outcome": {"type": "string", "enum": ["delivered", "failed"]},
                        "message": {"type": "string", "description": "What happened, in words."},
                        "response": {"description": "Delivered: the receiver's answer."},
                        "error": {"type": "string", "description": "Failed: why."},
                        "next_attempt_at": {"type": "number", "description": "Failed: when the worker tries again (Unix seconds)."},
                    }
                },
                "Session": {
                    "type": "object", "required": ["signed_in", "csrf", "expires_in_s"], "additionalProperties": false,
                    "properties": {
                        "signed_in": {"type": "boolean"},
                        "csrf": text(),
                        "expires_in_s": {"type": "integer", "minimum": 0},
                    }
                },
                "Outbox": {
                    "type": "object", "required": ["items"], "additionalProperties": false,
                    "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/OutboxItem"}}}
                },
            }
        }
    })
}
