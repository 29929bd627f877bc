// The account page: profile, email, password, sessions, linked accounts, deletion. Actions
// that need a recent sign-in (SESSION_NOT_FRESH) ask for the password again, then retry.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Navigate, useLocation, useNavigate } from "react-router";
import { api, unwrap, type SessionWithUser } from "../api";
import { Confirm, Dialog, ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { SESSION_KEY, useSession, useSessionChanged } from "../session";
import { ago, describeDevice } from "../ua";
import { needsReauth, useReauth } from "../components/reauth";
import { emailProblem, newPasswordProblem, passwordHint, ResendVerification } from "./auth";
import { usePageSettings } from "../settings";
import { FirstPassword, VerifyByCode } from "./bymail";
import { ApiKeys } from "./apikeys";
import { Passkeys } from "./passkeys";
import { TwoFactor } from "./twofactor";
import { marked, useT } from "../i18n";

function Profile({ me }: { me: SessionWithUser }) {
  const t = useT();
  const [name, setName] = useState(me.user.name);
  const [image, setImage] = useState(me.user.image ?? "");
  const qc = useQueryClient();
  const save = useMutation({
    mutationFn: () => unwrap(api.POST("/update-user", { body: { name: name.trim(), image: image.trim() || null } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  // A new edit forgets the last "Saved.".
  const edit = (set: (v: string) => void) => (v: string) => {
    if (save.isSuccess) save.reset();
    set(v);
  };
  const nameError = !name.trim() ? marked("Enter your name.") : null;
  return (
    <section className="card" aria-labelledby="profile-h">
      <h2 id="profile-h">{t("Profile")}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!nameError) save.mutate();
        }}
        noValidate
      >
        <Field label="Name" name="name" autoComplete="name" value={name} onChange={edit(setName)} error={nameError} />
        <Field label="Image URL" name="image" type="url" autoComplete="photo" value={image} onChange={edit(setImage)} placeholder="https://…" />
        <ErrorBox error={save.error} />
        {save.isSuccess && <Notice>{t("Saved.")}</Notice>}
        <div>
          <Submit pending={save.isPending} disabled={!!nameError}>
            {t("Save profile")}
          </Submit>
        </div>
      </form>
    </section>
  );
}

function Email({ me }: { me: SessionWithUser }) {
  // Arrived from a sign-up that mailed a verification link.
  const sent = (useLocation().state as { verificationSent?: boolean } | null)?.verificationSent === true;
  const [email, setEmail] = useState("");
  const [touched, setTouched] = useState(false);
  const t = useT();
  const reauth = useReauth(me.user.email);
  const qc = useQueryClient();
  const change = useMutation({
    mutationFn: () => unwrap(api.POST("/change-email", { body: { newEmail: email.trim(), callbackURL: "/account" } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
    onError: (e) => needsReauth(e) && reauth.ask(() => change.mutate()),
  });
  const problem = touched ? emailProblem(email) : null;
  return (
    <section className="card" aria-labelledby="email-h">
      <h2 id="email-h">{t("Email")}</h2>
      <p>
        {me.user.email}{" "}
        {me.user.emailVerified ? <span className="badge ok">{t("verified")}</span> : <span className="badge">{t("not verified")}</span>}
      </p>
      {!me.user.emailVerified && (
        <>
          {sent ? (
            <Notice>{t("Check your inbox: we sent a link to {email}. Open it to verify your address.", { email: me.user.email })}</Notice>
          ) : (
            <p className="muted">{t("Verify your address so you can recover your account and accept invitations.")}</p>
          )}
          <ResendVerification email={me.user.email} again={sent} />
          <VerifyByCode email={me.user.email} onDone={() => qc.invalidateQueries({ queryKey: SESSION_KEY })} />
        </>
      )}
      <form
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          setTouched(true);
          if (!emailProblem(email)) change.mutate();
        }}
        noValidate
      >
        <Field label="New email" name="new-email" type="email" autoComplete="email" value={email} onChange={setEmail} error={problem} />
        {change.isSuccess && (
          <Notice>
            {me.user.emailVerified
              ? t("We sent a confirmation link to {email}; after it, a link to {next} proves the new address.", { email: me.user.email, next: email.trim() })
              : t("Your email address was changed.")}
          </Notice>
        )}
        {!needsReauth(change.error) && <ErrorBox error={change.error} />}
        <div>
          <Submit pending={change.isPending}>{t("Change email")}</Submit>
        </div>
      </form>
      {reauth.dialog}
    </section>
  );
}

function Password({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const t = useT();
  const accounts = useQuery({ queryKey: ["accounts"], queryFn: () => unwrap(api.GET("/list-accounts")) });
  if (accounts.data && !accounts.data.some((a) => a.providerId === "credential"))
    return (
      <section className="card" aria-labelledby="password-h">
        <h2 id="password-h">{t("Password")}</h2>
        <FirstPassword
          email={me.user.email}
          onDone={() => {
            // A reset may sign the account out everywhere: the session is asked again.
            qc.invalidateQueries({ queryKey: ["accounts"] });
            qc.invalidateQueries({ queryKey: SESSION_KEY });
          }}
        />
      </section>
    );
  return <ChangePassword />;
}

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [revoke, setRevoke] = useState(true);
  const [touched, setTouched] = useState(false);
  const rules = usePageSettings().password;
  const qc = useQueryClient();
  const t = useT();
  const change = useMutation({
    mutationFn: () =>
      unwrap(api.POST("/change-password", { body: { currentPassword: current, newPassword: next, revokeOtherSessions: revoke } })),
    onSuccess: () => {
      setCurrent("");
      setNext("");
      setTouched(false);
      qc.invalidateQueries({ queryKey: ["sessions"] });
    },
  });
  const nextError = touched ? newPasswordProblem(next, rules, t) : null;
  return (
    <section className="card" aria-labelledby="password-h">
      <h2 id="password-h">{t("Password")}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setTouched(true);
          if (!current || newPasswordProblem(next, rules)) return;
          change.mutate();
        }}
        noValidate
      >
        <PasswordField label="Current password" name="current-password" autoComplete="current-password" value={current} onChange={setCurrent} error={touched && !current ? t("Enter your current password.") : null} />
        <PasswordField label="New password" name="new-password" autoComplete="new-password" value={next} onChange={setNext} error={nextError} hint={passwordHint(rules, t)} />
        <label className="check">
          <input type="checkbox" checked={revoke} onChange={(e) => setRevoke(e.target.checked)} /> {t("Sign out of every other session")}
        </label>
        <ErrorBox error={change.error} />
        {change.isSuccess && (
          <Notice>{revoke ? t("Your password was changed and your other sessions were signed out.") : t("Your password was changed.")}</Notice>
        )}
        <div>
          <Submit pending={change.isPending}>{t("Change password")}</Submit>
        </div>
      </form>
    </section>
  );
}

function Sessions({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["sessions"], queryFn: () => unwrap(api.GET("/list-sessions")) });
  const t = useT();
  const [target, setTarget] = useState<{ token: string; label: string } | "others" | null>(null);
  const revoke = useMutation({
    mutationFn: async () => {
      if (target === "others") return unwrap(api.POST("/revoke-other-sessions"));
      if (target) return unwrap(api.POST("/revoke-session", { body: { token: target.token } }));
    },
    onSuccess: () => {
      setTarget(null);
      qc.invalidateQueries({ queryKey: ["sessions"] });
    },
  });
  const sessions = [...(list.data ?? [])].sort((a, b) =>
    a.id === me.session.id ? -1 : b.id === me.session.id ? 1 : Date.parse(b.updatedAt) - Date.parse(a.updatedAt),
  );
  return (
    <section className="card" aria-labelledby="sessions-h">
      <h2 id="sessions-h">{t("Sessions")}</h2>
      {list.isPending && <p>{t("Loading…")}</p>}
      <ErrorBox error={list.error} />
      <ul className="list" aria-label={t("Your sessions")}>
        {sessions.map((s) => {
          const current = s.id === me.session.id;
          return (
            <li key={s.id} data-current={current || undefined}>
              <div>
                <strong>{describeDevice(s.userAgent, t)}</strong> {current && <span className="badge ok">{t("this session")}</span>}
                {s.impersonatedBy && <span className="badge">{t("opened by an administrator")}</span>}
                <div className="muted">
                  {s.ipAddress ?? t("unknown address")} · {t("signed in {ago}", { ago: ago(s.createdAt, Date.now(), t) })}
                </div>
              </div>
              {!current && (
                <button type="button" className="secondary" onClick={() => setTarget({ token: s.token, label: describeDevice(s.userAgent, t) })}>
                  {t("Revoke")}
                </button>
              )}
            </li>
          );
        })}
      </ul>
      {sessions.length > 1 && (
        <p>
          <button type="button" className="secondary" onClick={() => setTarget("others")}>
            {t("Sign out of all other sessions")}
          </button>
        </p>
      )}
      {target && (
        <Confirm
          title={target === "others" ? marked("Sign out everywhere else?") : marked("Revoke this session?")}
          body={
            target === "others"
              ? t("Every session but this one will be signed out.")
              : t("The session on {device} will be signed out.", { device: target.label })
          }
          confirm={target === "others" ? marked("Sign out others") : marked("Revoke")}
          action={revoke}
          onClose={() => setTarget(null)}
        />
      )}
    </section>
  );
}

function LinkedAccounts({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const accounts = useQuery({ queryKey: ["accounts"], queryFn: () => unwrap(api.GET("/list-accounts")) });
  const providers = useQuery({ queryKey: ["social-providers"], queryFn: () => unwrap(api.GET("/social-providers")), staleTime: Infinity });
  const passkeys = useQuery({ queryKey: ["passkeys"], queryFn: () => unwrap(api.GET("/passkey/list-user-passkeys")) });
  const [unlinking, setUnlinking] = useState<{ id: string; providerId: string } | null>(null);
  const t = useT();
  const reauth = useReauth(me.user.email);
  const unlink = useMutation({
    mutationFn: () => unwrap(api.POST("/unlink-account", { body: { providerId: unlinking?.providerId ?? "", accountId: unlinking?.id } })),
    onSuccess: () => {
      setUnlinking(null);
      qc.invalidateQueries({ queryKey: ["accounts"] });
    },
    onError: (e) => needsReauth(e) && reauth.ask(() => unlink.mutate()),
  });
  const link = useMutation({
    mutationFn: (provider: string) =>
      unwrap(api.POST("/link-social", { body: { provider, callbackURL: "/account", errorCallbackURL: "/error", disableRedirect: true } })),
    onSuccess: (data) => data.url && window.location.assign(data.url),
  });
  const linked = new Set((accounts.data ?? []).map((a) => a.providerId));
  const name = (id: string) => (id === "credential" ? t("Email and password") : (providers.data?.find((p) => p.id === id)?.name ?? id));
  return (
    <section className="card" aria-labelledby="linked-h">
      <h2 id="linked-h">{t("Sign-in methods")}</h2>
      {accounts.isPending && <p>{t("Loading…")}</p>}
      <ErrorBox error={accounts.error} />
      <ul className="list">
        {(accounts.data ?? []).map((a) => (
          <li key={a.id}>
            <span>{name(a.providerId)}</span>
            {/* The last one may go while a passkey is left (the server decides). */}
            {((accounts.data?.length ?? 0) > 1 || (passkeys.data?.length ?? 0) > 0) && (
              <button type="button" className="secondary" onClick={() => setUnlinking({ id: a.id, providerId: a.providerId })}>
                {t("Unlink")}
              </button>
            )}
          </li>
        ))}
      </ul>
      {(providers.data ?? [])
        .filter((p) => !linked.has(p.id))
        .map((p) => (
          <p key={p.id}>
            <button type="button" className="secondary" disabled={link.isPending} onClick={() => link.mutate(p.id)}>
              {t("Link {provider}", { provider: p.name })}
            </button>
          </p>
        ))}
      <ErrorBox error={link.error} />
      {unlinking && !reauth.open && (
        <Confirm
          title="Unlink this sign-in method?"
          body={t("You will no longer sign in with {method}.", { method: name(unlinking.providerId) })}
          confirm="Unlink"
          action={unlink}
          onClose={() => setUnlinking(null)}
        />
      )}
      {reauth.dialog}
    </section>
  );
}

function DeleteAccount({ me }: { me: SessionWithUser }) {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState("");
  const t = useT();
  const reauth = useReauth(me.user.email);
  const navigate = useNavigate();
  const changed = useSessionChanged();
  const del = useMutation({
    mutationFn: () => unwrap(api.POST("/delete-user", { body: { password: password || null, callbackURL: "/sign-in" } })),
    onSuccess: async (data) => {
      if (data.message === "User deleted") {
        await changed();
        navigate("/sign-in", { replace: true });
      }
    },
    onError: (e) => needsReauth(e) && reauth.ask(() => del.mutate(undefined, { onSuccess: () => setOpen(false) })),
  });
  return (
    <section className="card" aria-labelledby="delete-h">
      <h2 id="delete-h">{t("Delete account")}</h2>
      <p className="muted">{t("Deleting your account removes your sessions, sign-in methods and memberships. It cannot be undone.")}</p>
      {del.isSuccess && del.data.message !== "User deleted" ? (
        <Notice>{t("We sent a confirmation link to {email}. Open it in this browser to delete your account.", { email: me.user.email })}</Notice>
      ) : (
        <button type="button" className="danger" onClick={() => setOpen(true)}>
          {t("Delete my account…")}
        </button>
      )}
      {open && !reauth.open && (
        <Dialog title="Delete your account?" onClose={() => setOpen(false)}>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              del.mutate(undefined, { onSuccess: () => setOpen(false) });
            }}
          >
            <p>{t("We will email you a link to confirm. Enter your password to continue.")}</p>
            <PasswordField label="Password" name="password" autoComplete="current-password" value={password} onChange={setPassword} />
            {!needsReauth(del.error) && <ErrorBox error={del.error} />}
            <div className="row">
              <button type="button" className="secondary" onClick={() => setOpen(false)}>
                {t("Cancel")}
              </button>
              <Submit pending={del.isPending} className="danger">
                {t("Delete account")}
              </Submit>
            </div>
          </form>
        </Dialog>
      )}
      {reauth.dialog}
    </section>
  );
}

export function Account() {
  const session = useSession();
  const t = useT();
  if (session.isPending) return <main>{t("Loading…")}</main>;
  if (!session.data) return <Navigate to="/sign-in?redirectTo=/account" replace />;
  const me = session.data;
  return (
    <main>
      <h1>{t("Your account")}</h1>
      {/* Kept across the session's reloads, so "Saved." stays after a save. */}
      <Profile me={me} key={me.user.id} />
      <Email me={me} />
      <Password me={me} />
      <TwoFactor me={me} />
      <Passkeys me={me} />
      <Sessions me={me} />
      <ApiKeys />
      <LinkedAccounts me={me} />
      <DeleteAccount me={me} />
    </main>
  );
}
