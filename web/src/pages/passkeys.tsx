// The account page's passkeys card: the user's passkeys (name, added, last used), adding one
// (the browser asks the authenticator), renaming and removing one.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas, type SessionWithUser } from "../api";
import { needsReauth, useReauth } from "../components/reauth";
import { Confirm, ErrorBox, Field, Notice, Submit } from "../components/ui";
import { ago, describeDevice } from "../ua";
import { cancelled, create, passkeysSupported } from "../webauthn";
import { useT } from "../i18n";

type Passkey = Schemas["Passkey"];
const KEY = ["passkeys"];

function Row({ p, onNotice }: { p: Passkey; onNotice: (s: string) => void }) {
  const qc = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(p.name ?? "");
  const [removing, setRemoving] = useState(false);
  const t = useT();
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/passkey/delete-passkey", { body: { id: p.id } })),
    onSuccess: async () => {
      setRemoving(false);
      onNotice(t("Passkey removed."));
      await qc.invalidateQueries({ queryKey: KEY });
    },
  });
  const rename = useMutation({
    mutationFn: () => unwrap(api.POST("/passkey/update-passkey", { body: { id: p.id, name: name.trim() } })),
    onSuccess: async () => {
      setEditing(false);
      onNotice(t("Passkey renamed."));
      await qc.invalidateQueries({ queryKey: KEY });
    },
  });
  const label = p.name || t("Passkey");
  return (
    <li>
      {editing ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim()) rename.mutate();
          }}
        >
          <Field label={t("New name for {passkey}", { passkey: label })} name="passkey-name" value={name} onChange={setName} />
          <ErrorBox error={rename.error} />
          <div className="row">
            <button type="button" className="secondary" onClick={() => setEditing(false)}>
              {t("Cancel")}
            </button>
            <Submit pending={rename.isPending}>{t("Save")}</Submit>
          </div>
        </form>
      ) : (
        <>
          <div>
            <strong>{label}</strong>
            <div className="muted">
              {t("Added {ago}", { ago: ago(p.createdAt, Date.now(), t) })}
              {", "}
              {p.lastUsedAt ? t("last used {ago}", { ago: ago(p.lastUsedAt, Date.now(), t) }) : t("never used yet")}
              {p.deviceType === "multiDevice" ? ` · ${t("synced")}` : ""}
            </div>
          </div>
          <div className="row">
            <button type="button" className="secondary" onClick={() => setEditing(true)} aria-label={t("Rename {passkey}", { passkey: label })}>
              {t("Rename")}
            </button>
            <button type="button" className="danger" onClick={() => setRemoving(true)} aria-label={t("Remove {passkey}", { passkey: label })}>
              {t("Remove")}
            </button>
          </div>
        </>
      )}
      {removing && (
        <Confirm
          title={t("Remove {passkey}?", { passkey: label })}
          body="You will not be able to sign in with it any more."
          confirm="Remove"
          action={remove}
          onClose={() => setRemoving(false)}
        />
      )}
    </li>
  );
}

export function Passkeys({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const reauth = useReauth(me.user.email);
  const [notice, setNotice] = useState<string | null>(null);
  const t = useT();
  const list = useQuery({ queryKey: KEY, queryFn: () => unwrap(api.GET("/passkey/list-user-passkeys")) });
  const add = useMutation({
    mutationFn: async () => {
      const options = await unwrap(api.GET("/passkey/generate-register-options"));
      const response = await create(options);
      // Named after this browser and device ("Chrome on macOS"); renamed at will.
      return unwrap(api.POST("/passkey/verify-registration", { body: { response, name: describeDevice(navigator.userAgent) } }));
    },
    onSuccess: async () => {
      setNotice(t("Passkey added. You can sign in with it now."));
      await qc.invalidateQueries({ queryKey: KEY });
    },
    onError: (e) => needsReauth(e) && reauth.ask(() => add.mutate()),
  });
  const error = add.error && !cancelled(add.error) && !needsReauth(add.error) ? add.error : null;
  return (
    <section className="card" aria-labelledby="passkeys-h">
      <h2 id="passkeys-h">{t("Passkeys")}</h2>
      <p className="muted">{t("Sign in with your fingerprint, face or screen lock instead of a password.")}</p>
      {notice && <Notice>{notice}</Notice>}
      <ErrorBox error={list.error} />
      {list.data && list.data.length > 0 && (
        <ul className="list" aria-label={t("Your passkeys")}>
          {list.data.map((p) => (
            <Row key={p.id} p={p} onNotice={setNotice} />
          ))}
        </ul>
      )}
      {list.data && list.data.length === 0 && <p>{t("No passkeys yet.")}</p>}
      <ErrorBox error={error} />
      {reauth.dialog}
      {passkeysSupported() ? (
        <button type="button" disabled={add.isPending} onClick={() => add.mutate()}>
          {t("Add a passkey")}
        </button>
      ) : (
        <p className="muted">{t("This browser cannot use passkeys.")}</p>
      )}
    </section>
  );
}
