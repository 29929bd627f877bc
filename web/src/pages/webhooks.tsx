// An organization's webhooks, for members allowed webhook:*: add an endpoint (its URL and the
// events it hears of) and see its signing secret once; each endpoint with its recent deliveries
// (status, attempts) and a "Send again" button, turned off and on, its secret rotated, deleted.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../api";
import { Confirm, ErrorBox, Field, Notice, ShownOnce, Submit } from "../components/ui";
import { ago } from "../ua";

type Webhook = Schemas["Webhook"];
type Delivery = Schemas["WebhookDelivery"];

/** The events offered, by group (patterns the server knows). */
const EVENTS: [string, string][] = [
  ["member.*", "Members added, removed, their roles changed"],
  ["invitation.*", "Invitations made, accepted, rejected, canceled"],
  ["organization.*", "The organization changed or deleted"],
  ["team.*", "Teams and their members"],
  ["role.*", "Custom roles"],
];

function listKey(orgId: string) {
  return ["webhooks", orgId];
}

function lastAttempt(d: Delivery): string {
  const a = d.attempts[d.attempts.length - 1];
  if (!a) return "not tried yet";
  const what = a.statusCode ? `answered ${a.statusCode}` : (a.error ?? "no answer");
  return `${what} ${ago(a.at)}`;
}

function Deliveries({ orgId, hook }: { orgId: string; hook: Webhook }) {
  const qc = useQueryClient();
  const key = ["webhook-deliveries", hook.id];
  const list = useQuery({
    queryKey: key,
    queryFn: () =>
      unwrap(api.GET("/organization/webhook/deliveries", { params: { query: { organizationId: orgId, webhookId: hook.id, limit: 20 } } })),
  });
  const again = useMutation({
    mutationFn: (deliveryId: string) => unwrap(api.POST("/organization/webhook/redeliver", { body: { organizationId: orgId, deliveryId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  return (
    <div>
      <ErrorBox error={list.error ?? again.error} />
      {list.data && list.data.deliveries.length === 0 && <p className="muted">No deliveries yet.</p>}
      {list.data && list.data.deliveries.length > 0 && (
        <table aria-label={`Deliveries to ${hook.url}`}>
          <thead>
            <tr>
              <th>Event</th>
              <th>Status</th>
              <th>Last attempt</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.deliveries.map((d) => (
              <tr key={d.id}>
                <td>
                  {d.type} <span className="muted">{ago(d.createdAt)}</span>
                </td>
                <td>
                  {d.status}
                  {d.attempts.length > 1 ? ` (${d.attempts.length} attempts)` : ""}
                </td>
                <td>{lastAttempt(d)}</td>
                <td>
                  {d.status !== "pending" && (
                    <button type="button" className="secondary" onClick={() => again.mutate(d.id)} aria-label={`Send ${d.type} again`}>
                      Send again
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Endpoint({ orgId, hook, onSecret, onNotice }: { orgId: string; hook: Webhook; onSecret: (s: string) => void; onNotice: (s: string) => void }) {
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const refresh = () => qc.invalidateQueries({ queryKey: listKey(orgId) });
  const toggle = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/webhook/update", { body: { organizationId: orgId, webhookId: hook.id, enabled: !hook.enabled } })),
    onSuccess: async (w) => {
      onNotice(w.enabled ? `${hook.url} turned on.` : `${hook.url} turned off: it hears of nothing until turned on.`);
      await refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/webhook/rotate-secret", { body: { organizationId: orgId, webhookId: hook.id } })),
    onSuccess: async (w) => {
      onSecret(w.secret);
      await refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/webhook/delete", { body: { organizationId: orgId, webhookId: hook.id } })),
    onSuccess: async () => {
      setDeleting(false);
      onNotice(`${hook.url} deleted.`);
      await refresh();
    },
  });
  const state = hook.enabled ? "on" : hook.disabledReason === "failing" ? "off: its deliveries kept failing" : "off";
  return (
    <li>
      <div>
        <strong>{hook.url}</strong>
        <div className="muted">
          {hook.events.join(", ")} · {state}
          {hook.description ? ` · ${hook.description}` : ""}
        </div>
        <ErrorBox error={toggle.error ?? rotate.error} />
        {open && <Deliveries orgId={orgId} hook={hook} />}
      </div>
      <div className="row">
        <button type="button" className="secondary" onClick={() => setOpen(!open)} aria-expanded={open} aria-label={`Deliveries to ${hook.url}`}>
          Deliveries
        </button>
        <button type="button" className="secondary" onClick={() => toggle.mutate()} aria-label={`${hook.enabled ? "Turn off" : "Turn on"} ${hook.url}`}>
          {hook.enabled ? "Turn off" : "Turn on"}
        </button>
        <button type="button" className="secondary" onClick={() => rotate.mutate()} aria-label={`New secret for ${hook.url}`}>
          New secret
        </button>
        <button type="button" className="danger" onClick={() => setDeleting(true)} aria-label={`Delete ${hook.url}`}>
          Delete
        </button>
      </div>
      {deleting && (
        <Confirm
          title={`Delete ${hook.url}?`}
          body="It will hear of nothing more, and its deliveries are forgotten."
          confirm="Delete"
          action={remove}
          onClose={() => setDeleting(false)}
        />
      )}
    </li>
  );
}

export function Webhooks({ orgId }: { orgId: string }) {
  const qc = useQueryClient();
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>(["member.*"]);
  const [secret, setSecret] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const list = useQuery({
    queryKey: listKey(orgId),
    queryFn: () => unwrap(api.GET("/organization/webhook/list", { params: { query: { organizationId: orgId } } })),
  });
  const add = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/webhook/create", { body: { organizationId: orgId, url: url.trim(), events } })),
    onSuccess: async (made) => {
      setSecret(made.secret);
      setUrl("");
      setNotice(null);
      await qc.invalidateQueries({ queryKey: listKey(orgId) });
    },
  });
  const pick = (e: string, on: boolean) => setEvents(on ? [...events, e] : events.filter((x) => x !== e));
  return (
    <section className="card" aria-labelledby="webhooks-h">
      <h2 id="webhooks-h">Webhooks</h2>
      <p className="muted">
        Endpoints of your own servers that hear of this organization's events, each signed (Standard Webhooks) so that they can tell it came from here.
      </p>
      {notice && <Notice>{notice}</Notice>}
      {secret && (
        <ShownOnce
          label="Signing secret"
          intro="The endpoint's signing secret. Copy it now: it will not be shown again. Verify each delivery's webhook-signature header with it."
          secret={secret}
          onDone={() => setSecret(null)}
        />
      )}
      <ErrorBox error={list.error} />
      {list.data && list.data.length > 0 && (
        <ul className="list" aria-label="Webhook endpoints">
          {list.data.map((w) => (
            <Endpoint key={w.id} orgId={orgId} hook={w} onSecret={setSecret} onNotice={setNotice} />
          ))}
        </ul>
      )}
      {list.data && list.data.length === 0 && <p>No endpoints yet.</p>}
      <h3>Add an endpoint</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (url.trim() && events.length) add.mutate();
        }}
      >
        <Field label="Endpoint URL" name="webhook-url" type="url" value={url} onChange={setUrl} placeholder="https://…" />
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map(([e, what]) => (
            <label key={e} className="check">
              <input type="checkbox" checked={events.includes(e)} onChange={(ev) => pick(e, ev.target.checked)} /> {what}
            </label>
          ))}
        </fieldset>
        <ErrorBox error={add.error} />
        <Submit pending={add.isPending} disabled={!url.trim() || events.length === 0}>
          Add the endpoint
        </Submit>
      </form>
    </section>
  );
}
