#!/usr/bin/env python3
"""Builds fixtures/demo/directory.json from the public tool catalogue (real_tools.jsonl).

Usage: python3 scripts/build_fixtures.py ../shared/eval/real_tools.jsonl fixtures/demo

Takes every `preferred: true` row (one implementation per connector) and writes a floorgate
directory document (schema 1). The data has tool names, descriptions, input schemas and
annotations; it has no API origins, connector ids or HTTP operations, so those are invented
here, deterministically (see fixtures/demo/README.md). The demo tenant's catalog.json,
policy.json and members.json are written by hand and are not touched by this script.
"""

import json
import re
import sys

# Real API origins and base paths for the better-known products; every other connector gets an
# invented origin under the reserved `.example` TLD.
KNOWN_ORIGINS = {
    "Notion": ("https://api.notion.com", "/v1"),
    "GitHub": ("https://api.github.com", ""),
    "Linear": ("https://api.linear.app", ""),
    "Slack": ("https://slack.com", "/api"),
    "Cal.com": ("https://api.cal.com", "/v2"),
    "Stripe": ("https://api.stripe.com", "/v1"),
    "Sentry": ("https://sentry.io", "/api/0"),
    "HubSpot": ("https://api.hubapi.com", ""),
    "Asana": ("https://app.asana.com", "/api/1.0"),
    "Airtable": ("https://api.airtable.com", "/v0"),
    "Trello": ("https://api.trello.com", "/1"),
    "Zendesk": ("https://example.zendesk.com", "/api/v2"),
    "Intercom": ("https://api.intercom.io", ""),
    "PagerDuty": ("https://api.pagerduty.com", ""),
    "Datadog": ("https://api.datadoghq.com", "/api"),
    "Figma": ("https://api.figma.com", "/v1"),
    "Discord": ("https://discord.com", "/api/v10"),
    "Shopify": ("https://example.myshopify.com", "/admin/api"),
    "Mailchimp": ("https://us1.api.mailchimp.com", "/3.0"),
    "Twilio": ("https://api.twilio.com", "/2010-04-01"),
    "Resend": ("https://api.resend.com", ""),
    "Dropbox": ("https://api.dropboxapi.com", "/2"),
    "Box": ("https://api.box.com", "/2.0"),
    "Calendly": ("https://api.calendly.com", ""),
    "ClickUp": ("https://api.clickup.com", "/api/v2"),
    "Cloudflare": ("https://api.cloudflare.com", "/client/v4"),
    "GitLab": ("https://gitlab.com", "/api/v4"),
    "Gmail": ("https://gmail.googleapis.com", "/gmail/v1"),
    "Google Calendar": ("https://www.googleapis.com", "/calendar/v3"),
    "Jira": ("https://api.atlassian.com", "/ex/jira"),
    "Confluence": ("https://api.atlassian.com", "/ex/confluence"),
    "monday.com": ("https://api.monday.com", "/v2"),
    "Okta": ("https://example.okta.com", "/api/v1"),
    "Salesforce": ("https://example.my.salesforce.com", "/services/data"),
}

# Connectors of the demo tenant get invented HTTP operations so that execution can be tested;
# the other directory tools are listed and searchable but declare no operation.
DEMO_CONNECTORS = {"Notion", "GitHub", "Linear", "Slack", "Cal.com", "Stripe"}

RESERVED = {
    "whoami", "list_connectors", "list_connections", "describe_tool", "list_my_grants",
    "revoke_my_grant", "list_members", "suspend_member", "reinstate_member", "remove_member",
    "view_policy", "search_tools", "execute_tool",
}
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
MAX_SCHEMA_CHARS = 6000


def slug(label):
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def tool_name(name, connector_id):
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", name.strip())[:64] or "tool"
    if name in RESERVED:
        name = f"{connector_id.replace('-', '_')}_{name}"[:64]
    return name


def strip_nested_descriptions(node, depth):
    if isinstance(node, dict):
        return {
            k: strip_nested_descriptions(v, depth + 1)
            for k, v in node.items()
            if not (k == "description" and depth > 2 and isinstance(v, str))
        }
    if isinstance(node, list):
        return [strip_nested_descriptions(v, depth + 1) for v in node]
    return node


def input_schema(raw):
    schema = dict(raw) if isinstance(raw, dict) else {}
    if schema.get("type") != "object":
        # A few rows list their properties at the top level; the rest have no schema at all.
        if schema and all(isinstance(v, dict) for v in schema.values()):
            schema = {"type": "object", "properties": schema}
        else:
            schema = {"type": "object"}
    props = schema.get("properties")
    if props is None:
        schema.pop("properties", None)
    if isinstance(schema.get("required"), list):
        schema["required"] = [r for r in schema["required"] if isinstance(r, str) and r in (props or {})]
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        schema = strip_nested_descriptions(schema, 0)
    return schema


def annotations(raw):
    out = {}
    for key, value in (raw or {}).items():
        if key in HINTS and not isinstance(value, bool):
            continue
        if key == "title" and not isinstance(value, str):
            continue
        out[key] = value
    return out


VERBS_GET = ("get", "list", "search", "retrieve", "query", "read", "fetch", "find", "download")
VERBS_POST = ("create", "post", "add", "send", "run", "trigger", "submit", "push", "fork", "assign")
VERBS_PATCH = ("update", "patch", "edit", "move", "set", "merge")
VERBS_DELETE = ("delete", "remove", "cancel", "archive")


def operation(name, connector_label, schema):
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w]
    prefix = slug(connector_label).split("-")[0]
    words = [w for w in words if w not in (prefix, "api", "cal")] or ["call"]
    verbs = VERBS_GET + VERBS_POST + VERBS_PATCH + VERBS_DELETE
    verb = next((w for w in words if w in verbs), words[0])
    if verb in VERBS_GET and "post" not in words:
        method = "GET"
    elif verb in VERBS_DELETE:
        method = "DELETE"
    elif verb in VERBS_PATCH:
        method = "PATCH"
    else:
        method = "POST"
    resource = "-".join(w for w in words if w not in (verb, "a", "an", "the")) or verb
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    params = [
        p for p in required
        if re.fullmatch(r"[A-Za-z0-9_]+", p)
        and (props.get(p) or {}).get("type") in ("string", "integer")
        and (p in ("owner", "repo") or p.lower().endswith("id"))
    ]
    path = "/" + resource + "".join("/{" + p + "}" for p in params)
    op = {"method": method, "path": path}
    if "Notion-Version" in props:
        op["headers"] = ["Notion-Version"]
    return op


def main(source, out_dir):
    connectors = {}
    order = []
    with open(source, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            if not row.get("preferred"):
                continue
            label = row["connector"]
            if label not in connectors:
                order.append(label)
                connectors[label] = {"rows": [], "needs_account": row.get("needs_account", True)}
            connectors[label]["rows"].append(row)

    out = []
    for label in order:
        cid = slug(label)
        origin, base_path = KNOWN_ORIGINS.get(label, (f"https://api.{cid}.example", "/v1"))
        needs_account = connectors[label]["needs_account"]
        tools, seen = [], set()
        for row in connectors[label]["rows"]:
            name = tool_name(row["name"], cid)
            if name in seen:
                continue
            seen.add(name)
            schema = input_schema(row.get("inputSchema"))
            description = (row.get("description") or "").strip()
            if not description:
                title = (row.get("annotations") or {}).get("title")
                description = title if isinstance(title, str) and title.strip() else f"{label}: {row['name']}."
            tool = {"name": name, "description": description, "inputSchema": schema}
            ann = annotations(row.get("annotations"))
            if ann:
                tool["annotations"] = ann
            if label in DEMO_CONNECTORS:
                tool["operation"] = operation(name, label, schema)
            tools.append(tool)
        entry = {
            "id": cid,
            "label": label,
            "origin": origin,
            "base_path": base_path,
            "auth": {"scheme": "bearer" if needs_account else "none"},
            "tools": tools,
        }
        out.append(entry)

    # One tool per line: small, and diffs stay readable.
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    with open(f"{out_dir}/directory.json", "w", encoding="utf-8") as f:
        f.write('{"schema":1,"connectors":[\n')
        for i, entry in enumerate(out):
            head = {k: v for k, v in entry.items() if k != "tools"}
            f.write(json.dumps(head, **compact)[:-1] + ',"tools":[\n')
            f.write(",\n".join(json.dumps(t, **compact) for t in entry["tools"]))
            f.write("\n]}" + ("," if i + 1 < len(out) else "") + "\n")
        f.write("]}\n")
    print(f"{len(out)} connectors, {sum(len(c['tools']) for c in out)} tools")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
