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

function Profile({ me }: { me: SessionWithUser }) {
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
  const nameError = !name.trim() ? "Enter your name." : null;
  return (
    <section className="card" aria-labelledby="profile-h">
      <h2 id="profile-h">Profile</h2>
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
        {save.isSuccess && <Notice>Saved.</Notice>}
        <div>
          <Submit pending={save.isPending} disabled={!!nameError}>
            Save profile
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
      <h2 id="email-h">Email</h2>
      <p>
        {me.user.email}{" "}
        {me.user.emailVerified ? <span className="badge ok">verified</span> : <span className="badge">not verified</span>}
      </p>
      {!me.user.emailVerified && (
        <>
          {sent ? (
            <Notice>Check your inbox: we sent a link to {me.user.email}. Open it to verify your address.</Notice>
          ) : (
            <p className="muted">Verify your address so you can recover your account and accept invitations.</p>
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
              ? `We sent a confirmation link to ${me.user.email}; after it, a link to ${email.trim()} proves the new address.`
              : "Your email address was changed."}
          </Notice>
        )}
        {!needsReauth(change.error) && <ErrorBox error={change.error} />}
        <div>
          <Submit pending={change.isPending}>Change email</Submit>
        </div>
      </form>
      {reauth.dialog}
    </section>
  );
}

function Password({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const accounts = useQuery({ queryKey: ["accounts"], queryFn: () => unwrap(api.GET("/list-accounts")) });
  if (accounts.data && !accounts.data.some((a) => a.providerId === "credential"))
    return (
      <section className="card" aria-labelledby="password-h">
        <h2 id="password-h">Password</h2>
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
  const nextError = touched ? newPasswordProblem(next, rules) : null;
  return (
    <section className="card" aria-labelledby="password-h">
      <h2 id="password-h">Password</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setTouched(true);
          if (!current || newPasswordProblem(next, rules)) return;
          change.mutate();
        }}
        noValidate
      >
        <PasswordField label="Current password" name="current-password" autoComplete="current-password" value={current} onChange={setCurrent} error={touched && !current ? "Enter your current password." : null} />
        <PasswordField label="New password" name="new-password" autoComplete="new-password" value={next} onChange={setNext} error={nextError} hint={passwordHint(rules)} />
        <label className="check">
          <input type="checkbox" checked={revoke} onChange={(e) => setRevoke(e.target.checked)} /> Sign out of every other session
        </label>
        <ErrorBox error={change.error} />
        {change.isSuccess && <Notice>Your password was changed{revoke ? " and your other sessions were signed out" : ""}.</Notice>}
        <div>
          <Submit pending={change.isPending}>Change password</Submit>
        </div>
      </form>
    </section>
  );
}

function Sessions({ me }: { me: SessionWithUser }) {
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["sessions"], queryFn: () => unwrap(api.GET("/list-sessions")) });
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
      <h2 id="sessions-h">Sessions</h2>
      {list.isPending && <p>Loading…</p>}
      <ErrorBox error={list.error} />
      <ul className="list" aria-label="Your sessions">
        {sessions.map((s) => {
          const current = s.id === me.session.id;
          return (
            <li key={s.id} data-current={current || undefined}>
              <div>
                <strong>{describeDevice(s.userAgent)}</strong> {current && <span className="badge ok">this session</span>}
                {s.impersonatedBy && <span className="badge">opened by an administrator</span>}
                <div className="muted">
                  {s.ipAddress ?? "unknown address"} · signed in {ago(s.createdAt)}
                </div>
              </div>
              {!current && (
                <button type="button" className="secondary" onClick={() => setTarget({ token: s.token, label: describeDevice(s.userAgent) })}>
                  Revoke
                </button>
              )}
            </li>
          );
        })}
      </ul>
      {sessions.length > 1 && (
        <p>
          <button type="button" className="secondary" onClick={() => setTarget("others")}>
            Sign out of all other sessions
          </button>
        </p>
      )}
      {target && (
        <Confirm
          title={target === "others" ? "Sign out everywhere else?" : "Revoke this session?"}
          body={target === "others" ? "Every session but this one will be signed out." : `The session on ${target.label} will be signed out.`}
          confirm={target === "others" ? "Sign out others" : "Revoke"}
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
  const name = (id: string) => (id === "credential" ? "Email and password" : (providers.data?.find((p) => p.id === id)?.name ?? id));
  return (
    <section className="card" aria-labelledby="linked-h">
      <h2 id="linked-h">Sign-in methods</h2>
      {accounts.isPending && <p>Loading…</p>}
      <ErrorBox error={accounts.error} />
      <ul className="list">
        {(accounts.data ?? []).map((a) => (
          <li key={a.id}>
            <span>{name(a.providerId)}</span>
            {/* The last one may go while a passkey is left (the server decides). */}
            {((accounts.data?.length ?? 0) > 1 || (passkeys.data?.length ?? 0) > 0) && (
              <button type="button" className="secondary" onClick={() => setUnlinking({ id: a.id, providerId: a.providerId })}>
                Unlink
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
              Link {p.name}
            </button>
          </p>
        ))}
      <ErrorBox error={link.error} />
      {unlinking && !reauth.open && (
        <Confirm
          title="Unlink this sign-in method?"
          body={`You will no longer sign in with ${name(unlinking.providerId)}.`}
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
      <h2 id="delete-h">Delete account</h2>
      <p className="muted">Deleting your account removes your sessions, sign-in methods and memberships. It cannot be undone.</p>
      {del.isSuccess && del.data.message !== "User deleted" ? (
        <Notice>We sent a confirmation link to {me.user.email}. Open it in this browser to delete your account.</Notice>
      ) : (
        <button type="button" className="danger" onClick={() => setOpen(true)}>
          Delete my account…
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
            <p>We will email you a link to confirm. Enter your password to continue.</p>
            <PasswordField label="Password" name="password" autoComplete="current-password" value={password} onChange={setPassword} />
            {!needsReauth(del.error) && <ErrorBox error={del.error} />}
            <div className="row">
              <button type="button" className="secondary" onClick={() => setOpen(false)}>
                Cancel
              </button>
              <Submit pending={del.isPending} className="danger">
                Delete account
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
  if (session.isPending) return <main>Loading…</main>;
  if (!session.data) return <Navigate to="/sign-in?redirectTo=/account" replace />;
  const me = session.data;
  return (
    <main>
      <h1>Your account</h1>
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
