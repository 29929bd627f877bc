// An organization's webhooks, for members allowed webhook:*: add an endpoint (its URL and the
// events it hears of) and see its signing secret once; each endpoint with its recent deliveries
// (status, attempts) and a "Send again" button, turned off and on, its secret rotated, deleted.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../api";
import { Confirm, ErrorBox, Field, Notice, ShownOnce, Submit } from "../components/ui";
import { ago } from "../ua";
import { marked, named, useT, type T } from "../i18n";

type Webhook = Schemas["Webhook"];
type Delivery = Schemas["WebhookDelivery"];

/** The events offered, by group (patterns the server knows). */
const EVENTS: [string, string][] = [
  ["member.*", marked("Members added, removed, their roles changed")],
  ["invitation.*", marked("Invitations made, accepted, rejected, canceled")],
  ["organization.*", marked("The organization changed or deleted")],
  ["team.*", marked("Teams and their members")],
  ["role.*", marked("Custom roles")],
];

function listKey(orgId: string) {
  return ["webhooks", orgId];
}

const STATUS: Record<string, string> = {
  pending: marked("pending"),
  succeeded: marked("succeeded"),
  failed: marked("failed"),
};

function lastAttempt(d: Delivery, t: T): string {
  const a = d.attempts[d.attempts.length - 1];
  if (!a) return t("not tried yet");
  const when = ago(a.at, Date.now(), t);
  if (a.statusCode) return t("answered {status} {ago}", { status: a.statusCode, ago: when });
  return a.error ? `${a.error} ${when}` : t("no answer {ago}", { ago: when });
}

function Deliveries({ orgId, hook }: { orgId: string; hook: Webhook }) {
  const t = useT();
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
      {list.data && list.data.deliveries.length === 0 && <p className="muted">{t("No deliveries yet.")}</p>}
      {list.data && list.data.deliveries.length > 0 && (
        <table aria-label={t("Deliveries to {url}", { url: hook.url })}>
          <thead>
            <tr>
              <th>{t("Event")}</th>
              <th>{t("Status")}</th>
              <th>{t("Last attempt")}</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.deliveries.map((d) => (
              <tr key={d.id}>
                <td>
                  {d.type} <span className="muted">{ago(d.createdAt, Date.now(), t)}</span>
                </td>
                <td>
                  {named(STATUS, d.status, t)}
                  {d.attempts.length > 1 ? ` (${t("{n} attempts", { n: d.attempts.length })})` : ""}
                </td>
                <td>{lastAttempt(d, t)}</td>
                <td>
                  {d.status !== "pending" && (
                    <button type="button" className="secondary" onClick={() => again.mutate(d.id)} aria-label={t("Send {event} again", { event: d.type })}>
                      {t("Send again")}
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
  const t = useT();
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const refresh = () => qc.invalidateQueries({ queryKey: listKey(orgId) });
  const toggle = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/webhook/update", { body: { organizationId: orgId, webhookId: hook.id, enabled: !hook.enabled } })),
    onSuccess: async (w) => {
      onNotice(w.enabled ? t("{url} turned on.", { url: hook.url }) : t("{url} turned off: it hears of nothing until turned on.", { url: hook.url }));
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
      onNotice(t("{url} deleted.", { url: hook.url }));
      await refresh();
    },
  });
  const state = hook.enabled ? t("on") : hook.disabledReason === "failing" ? t("off: its deliveries kept failing") : t("off");
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
        <button type="button" className="secondary" onClick={() => setOpen(!open)} aria-expanded={open} aria-label={t("Deliveries to {url}", { url: hook.url })}>
          {t("Deliveries")}
        </button>
        <button type="button" className="secondary" onClick={() => toggle.mutate()} aria-label={hook.enabled ? t("Turn off {url}", { url: hook.url }) : t("Turn on {url}", { url: hook.url })}>
          {hook.enabled ? t("Turn off") : t("Turn on")}
        </button>
        <button type="button" className="secondary" onClick={() => rotate.mutate()} aria-label={t("New secret for {url}", { url: hook.url })}>
          {t("New secret")}
        </button>
        <button type="button" className="danger" onClick={() => setDeleting(true)} aria-label={t("Delete {name}", { name: hook.url })}>
          {t("Delete")}
        </button>
      </div>
      {deleting && (
        <Confirm
          title={t("Delete {name}?", { name: hook.url })}
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
  const t = useT();
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
      <h2 id="webhooks-h">{t("Webhooks")}</h2>
      <p className="muted">
        {t(
          "Endpoints of your own servers that hear of this organization's events, each signed (Standard Webhooks) so that they can tell it came from here.",
        )}
      </p>
      {notice && <Notice>{notice}</Notice>}
      {secret && (
        <ShownOnce
          label="Signing secret"
          intro={t("The endpoint's signing secret. Copy it now: it will not be shown again. Verify each delivery's webhook-signature header with it.")}
          secret={secret}
          onDone={() => setSecret(null)}
        />
      )}
      <ErrorBox error={list.error} />
      {list.data && list.data.length > 0 && (
        <ul className="list" aria-label={t("Webhook endpoints")}>
          {list.data.map((w) => (
            <Endpoint key={w.id} orgId={orgId} hook={w} onSecret={setSecret} onNotice={setNotice} />
          ))}
        </ul>
      )}
      {list.data && list.data.length === 0 && <p>{t("No endpoints yet.")}</p>}
      <h3>{t("Add an endpoint")}</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (url.trim() && events.length) add.mutate();
        }}
      >
        <Field label="Endpoint URL" name="webhook-url" type="url" value={url} onChange={setUrl} placeholder="https://…" />
        <fieldset>
          <legend>{t("Events")}</legend>
          {EVENTS.map(([e, what]) => (
            <label key={e} className="check">
              <input type="checkbox" checked={events.includes(e)} onChange={(ev) => pick(e, ev.target.checked)} /> {t(what)}
            </label>
          ))}
        </fieldset>
        <ErrorBox error={add.error} />
        <Submit pending={add.isPending} disabled={!url.trim() || events.length === 0}>
          {t("Add the endpoint")}
        </Submit>
      </form>
    </section>
  );
}
