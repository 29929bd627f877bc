// API keys, on the account page (the user's own) and on an organization's page (its keys, for
// members allowed apiKey:*): make one with a name and an expiry, see the key once with a copy
// button, list keys by name and first characters with their last use, revoke one.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../api";
import { Confirm, ErrorBox, Field, Notice, ShownOnce, Submit } from "../components/ui";
import { ago } from "../ua";
import { marked, useLanguage, useT, useTx, type T } from "../i18n";

type ApiKey = Schemas["ApiKey"];

const EXPIRY: [string, number | null][] = [
  [marked("Never"), null],
  [marked("7 days"), 7],
  [marked("30 days"), 30],
  [marked("90 days"), 90],
  [marked("1 year"), 365],
];

function keyOf(orgId?: string) {
  return ["api-keys", orgId ?? "own"];
}

function describeKey(k: ApiKey, t: T, lang: string): string {
  const now = Date.now();
  const parts = [t("Made {ago}", { ago: ago(k.createdAt, now, t) })];
  parts.push(k.lastRequest ? t("last used {ago}", { ago: ago(k.lastRequest, now, t) }) : t("never used yet"));
  if (k.expiresAt) {
    const at = new Date(k.expiresAt);
    parts.push(at.getTime() < now ? t("expired") : t("expires {date}", { date: at.toLocaleDateString(lang) }));
  }
  if (!k.enabled) parts.push(t("disabled"));
  return parts.join(", ");
}

function Row({ k, orgId, onNotice }: { k: ApiKey; orgId?: string; onNotice: (s: string) => void }) {
  const t = useT();
  const [lang] = useLanguage();
  const qc = useQueryClient();
  const [revoking, setRevoking] = useState(false);
  const revoke = useMutation({
    mutationFn: () => unwrap(api.POST("/api-key/delete", { body: { keyId: k.id } })),
    onSuccess: async () => {
      setRevoking(false);
      onNotice(t("Key {name} revoked: it works no more.", { name: k.name ?? k.start ?? "" }));
      await qc.invalidateQueries({ queryKey: keyOf(orgId) });
    },
  });
  const label = k.name || t("Unnamed key");
  return (
    <li>
      <div>
        <strong>{label}</strong> <code>{k.start}…</code>
        <div className="muted">{describeKey(k, t, lang)}</div>
      </div>
      <button type="button" className="danger" onClick={() => setRevoking(true)} aria-label={t("Revoke {name}", { name: label })}>
        {t("Revoke")}
      </button>
      {revoking && (
        <Confirm
          title={t("Revoke {name}?", { name: label })}
          body="Scripts and servers using it will be refused from now on."
          confirm="Revoke"
          action={revoke}
          onClose={() => setRevoking(false)}
        />
      )}
    </li>
  );
}

export function ApiKeys({ orgId }: { orgId?: string }) {
  const t = useT();
  const tx = useTx();
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [days, setDays] = useState<string>("Never");
  const [secret, setSecret] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const list = useQuery({
    queryKey: keyOf(orgId),
    queryFn: () => unwrap(api.GET("/api-key/list", { params: { query: orgId ? { organizationId: orgId } : {} } })),
  });
  const make = useMutation({
    mutationFn: () => {
      const expiry = EXPIRY.find(([l]) => l === days)?.[1] ?? null;
      return unwrap(
        api.POST("/api-key/create", {
          body: { name: name.trim(), expiresIn: expiry === null ? null : expiry * 86_400, organizationId: orgId },
        }),
      );
    },
    onSuccess: async (made) => {
      setSecret(made.key);
      setName("");
      setNotice(null);
      await qc.invalidateQueries({ queryKey: keyOf(orgId) });
    },
  });
  const title = orgId ? t("The organization's API keys") : t("API keys");
  return (
    <section className="card" aria-labelledby={`api-keys-h-${orgId ?? "own"}`}>
      <h2 id={`api-keys-h-${orgId ?? "own"}`}>{title}</h2>
      <p className="muted">
        {orgId
          ? t("Keys that let a server act on this organization, within your own permissions.")
          : t("Keys that let your scripts and servers call this service as you. Treat them like passwords.")}
      </p>
      {notice && <Notice>{notice}</Notice>}
      {secret && (
        <ShownOnce
          label="New API key"
          intro={tx("Your new key. Copy it now: it will not be shown again. Send it in the {header} header.", {
            header: <code>x-api-key</code>,
          })}
          secret={secret}
          onDone={() => setSecret(null)}
        />
      )}
      <ErrorBox error={list.error} />
      {list.data && list.data.apiKeys.length > 0 && (
        <ul className="list" aria-label={title}>
          {list.data.apiKeys.map((k) => (
            <Row key={k.id} k={k} orgId={orgId} onNotice={setNotice} />
          ))}
        </ul>
      )}
      {list.data && list.data.apiKeys.length === 0 && <p>{t("No keys yet.")}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) make.mutate();
        }}
      >
        <Field label="Key name" name="api-key-name" value={name} onChange={setName} />
        <label>
          {t("Expires")}
          <select value={days} onChange={(e) => setDays(e.target.value)}>
            {EXPIRY.map(([l]) => (
              <option key={l} value={l}>
                {t(l)}
              </option>
            ))}
          </select>
        </label>
        <ErrorBox error={make.error} />
        <Submit pending={make.isPending} disabled={!name.trim()}>
          {t("Make a key")}
        </Submit>
      </form>
    </section>
  );
}
