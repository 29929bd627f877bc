// The admin area (admin plugin routes): users with search and paging, roles, bans,
// impersonation, sessions, creating and removing users, and the audit log. The server decides
// who may do what; a refusal shows as its sentence.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, Navigate, useNavigate } from "react-router";
import { api, ApiError, unwrap, type User } from "../api";
import { AuditLog } from "../components/audit";
import { Confirm, Dialog, ErrorBox, Field, Notice, PasswordField, Submit } from "../components/ui";
import { useSession, useSessionChanged } from "../session";
import { ago, describeDevice } from "../ua";
import { emailProblem, newPasswordProblem } from "./auth";
import { marked, namedList, useLanguage, useT, type T } from "../i18n";
import { usePageSettings } from "../settings";

const PAGE = 20;

const ROLES: Record<string, string> = { user: marked("user"), admin: marked("admin") };

/** A user's role (a comma-separated list) as the page shows it. */
function roleName(role: string, t: T): string {
  return namedList(ROLES, role, t);
}

function UserSessions({ user, onClose }: { user: User; onClose: () => void }) {
  const t = useT();
  const qc = useQueryClient();
  const sessions = useQuery({
    queryKey: ["admin-sessions", user.id],
    queryFn: () => unwrap(api.POST("/admin/list-user-sessions", { body: { userId: user.id } })),
  });
  const revoke = useMutation({
    mutationFn: (sessionToken: string) => unwrap(api.POST("/admin/revoke-user-session", { body: { sessionToken } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["admin-sessions", user.id] }),
  });
  const revokeAll = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/revoke-user-sessions", { body: { userId: user.id } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["admin-sessions", user.id] }),
  });
  // For a user who lost their authenticator app and backup codes.
  const disableTwoFactor = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/disable-two-factor", { body: { userId: user.id } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["admin-users"] }),
  });
  return (
    <Dialog title={t("Sessions of {name}", { name: user.name })} onClose={onClose}>
      <div className="stack">
        <ErrorBox error={sessions.error ?? revoke.error ?? revokeAll.error ?? disableTwoFactor.error} />
        {disableTwoFactor.isSuccess && <Notice>{t("Two-factor sign-in is off for {name}.", { name: user.name })}</Notice>}
        {sessions.data?.sessions.length === 0 && <p className="muted">{t("No session.")}</p>}
        <ul className="list">
          {(sessions.data?.sessions ?? []).map((s) => (
            <li key={s.id}>
              <span>
                {describeDevice(s.userAgent, t)} <span className="muted">{ago(s.createdAt, Date.now(), t)}</span>
              </span>
              <button type="button" className="secondary" onClick={() => revoke.mutate(s.token)}>
                {t("Revoke")}
              </button>
            </li>
          ))}
        </ul>
        <div className="row">
          <button type="button" className="secondary" onClick={onClose}>
            {t("Close")}
          </button>
          <button type="button" className="danger" disabled={revokeAll.isPending} onClick={() => revokeAll.mutate()}>
            {t("Revoke all")}
          </button>
          {user.twoFactorEnabled && !disableTwoFactor.isSuccess && (
            <button type="button" className="danger" disabled={disableTwoFactor.isPending} onClick={() => disableTwoFactor.mutate()}>
              {t("Turn off two-factor sign-in")}
            </button>
          )}
        </div>
      </div>
    </Dialog>
  );
}

function BanDialog({ user, onClose }: { user: User; onClose: () => void }) {
  const t = useT();
  const qc = useQueryClient();
  const [reason, setReason] = useState("");
  const [days, setDays] = useState("");
  const ban = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/admin/ban-user", {
          body: { userId: user.id, banReason: reason.trim() || null, banExpiresIn: days ? Math.round(Number(days) * 86400) : null },
        }),
      ),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["admin-users"] });
      onClose();
    },
  });
  const daysError = days && !(Number(days) > 0) ? marked("A positive number of days, or empty for ever.") : null;
  return (
    <Dialog title={t("Ban {name}?", { name: user.name })} onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!daysError) ban.mutate();
        }}
      >
        <p className="muted">{t("Every session of this user is revoked, and signing in is refused.")}</p>
        <Field label="Reason" name="ban-reason" autoComplete="off" value={reason} onChange={setReason} />
        <Field label="For how many days (empty: for ever)" name="ban-days" type="number" autoComplete="off" value={days} onChange={setDays} error={daysError} />
        <ErrorBox error={ban.error} />
        <div className="row">
          <button type="button" className="secondary" onClick={onClose}>
            {t("Cancel")}
          </button>
          <Submit pending={ban.isPending} className="danger">
            {t("Ban")}
          </Submit>
        </div>
      </form>
    </Dialog>
  );
}

function CreateUser() {
  const t = useT();
  const rules = usePageSettings().password;
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState("user");
  const [touched, setTouched] = useState(false);
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/create-user", { body: { name: name.trim(), email: email.trim(), password, role } })),
    onSuccess: () => {
      setName("");
      setEmail("");
      setPassword("");
      setTouched(false);
      qc.invalidateQueries({ queryKey: ["admin-users"] });
    },
  });
  return (
    <section className="card" aria-labelledby="create-user-h">
      <h2 id="create-user-h">{t("Create a user")}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setTouched(true);
          if (!name.trim() || emailProblem(email) || newPasswordProblem(password, rules, t)) return;
          create.mutate();
        }}
        noValidate
      >
        <Field label="Name" name="new-user-name" autoComplete="off" value={name} onChange={setName} error={touched && !name.trim() ? marked("Enter a name.") : null} />
        <Field label="Email" name="new-user-email" type="email" autoComplete="off" value={email} onChange={setEmail} error={touched ? emailProblem(email) : null} />
        <PasswordField label="Password" name="new-user-password" autoComplete="new-password" value={password} onChange={setPassword} error={touched ? newPasswordProblem(password, rules, t) : null} />
        <label>
          {t("Role")}
          <select value={role} onChange={(e) => setRole(e.target.value)}>
            <option value="user">{t("user")}</option>
            <option value="admin">{t("admin")}</option>
          </select>
        </label>
        <ErrorBox error={create.error} />
        {create.isSuccess && <Notice>{t("User created.")}</Notice>}
        <div>
          <Submit pending={create.isPending}>{t("Create user")}</Submit>
        </div>
      </form>
    </section>
  );
}

export function Admin() {
  const t = useT();
  const [lang] = useLanguage();
  const session = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const changed = useSessionChanged();
  const [search, setSearch] = useState("");
  const [offset, setOffset] = useState(0);
  const [sessionsOf, setSessionsOf] = useState<User | null>(null);
  const [banning, setBanning] = useState<User | null>(null);
  const [removing, setRemoving] = useState<User | null>(null);
  const users = useQuery({
    queryKey: ["admin-users", search, offset],
    queryFn: () =>
      unwrap(
        api.GET("/admin/list-users", {
          params: {
            query: {
              limit: PAGE,
              offset,
              sortBy: "createdAt",
              sortDirection: "desc",
              ...(search.trim() ? { searchValue: search.trim(), searchField: "email", searchOperator: "contains" } : {}),
            },
          },
        }),
      ),
    enabled: !!session.data,
    retry: false,
  });
  const refresh = () => qc.invalidateQueries({ queryKey: ["admin-users"] });
  // A role picked waits for confirmation (user → admin must not be one mis-click).
  const [changing, setChanging] = useState<{ userId: string; name: string; role: string } | null>(null);
  const [roleNotice, setRoleNotice] = useState<string | null>(null);
  const setRole = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/set-role", { body: { userId: changing?.userId ?? "", role: changing?.role ?? "" } })),
    onSuccess: async () => {
      setRoleNotice(changing ? t("{name} is now {role}.", { name: changing.name, role: roleName(changing.role, t) }) : null);
      setChanging(null);
      await refresh();
    },
  });
  const unban = useMutation({
    mutationFn: (userId: string) => unwrap(api.POST("/admin/unban-user", { body: { userId } })),
    onSuccess: refresh,
  });
  const impersonate = useMutation({
    mutationFn: (userId: string) => unwrap(api.POST("/admin/impersonate-user", { body: { userId } })),
    onSuccess: async () => {
      await changed();
      navigate("/account");
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/remove-user", { body: { userId: removing?.id ?? "" } })),
    onSuccess: () => {
      setRemoving(null);
      refresh();
    },
  });
  if (session.isPending) return <main>{t("Loading…")}</main>;
  if (!session.data) return <Navigate to="/sign-in?redirectTo=/admin" replace />;
  // Not an administrator: the refusal alone, not a console whose every action fails.
  if (users.error instanceof ApiError && users.error.status === 403)
    return (
      <main className="narrow">
        <h1>{t("Administration")}</h1>
        <ErrorBox error={users.error} />
        <p>
          {t("This page is for administrators.")} <Link to="/account">{t("Back to your account")}</Link>
        </p>
      </main>
    );
  const total = users.data?.total ?? 0;
  return (
    <main>
      <h1>{t("Administration")}</h1>
      <section className="card" aria-labelledby="users-h">
        <h2 id="users-h">{t("Users")}</h2>
        <Field
          label="Search by email"
          name="search"
          type="search"
          autoComplete="off"
          value={search}
          onChange={(v) => {
            setSearch(v);
            setOffset(0);
          }}
        />
        <ErrorBox error={users.error ?? unban.error ?? impersonate.error} />
        {roleNotice && <Notice>{roleNotice}</Notice>}
        <table>
          <thead>
            <tr>
              <th>{t("Name")}</th>
              <th className="hide-sm">{t("Email")}</th>
              <th>{t("Role")}</th>
              <th className="hide-sm">{t("Created")}</th>
              <th>
                <span className="muted">{t("Actions")}</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(users.data?.users ?? []).map((u) => (
              <tr key={u.id} data-email={u.email}>
                <td>
                  {u.name} {u.banned && <span className="badge">{t("banned")}</span>}{" "}
                  {u.twoFactorEnabled && (
                    <span className="badge" title={t("Two-factor sign-in on")}>
                      2FA
                    </span>
                  )}
                </td>
                <td className="hide-sm">{u.email}</td>
                <td>
                  <select aria-label={t("Role of {name}", { name: u.name })} value={u.role} disabled={u.id === session.data!.user.id} onChange={(e) => setChanging({ userId: u.id, name: u.name, role: e.target.value })}>
                    {[...new Set([u.role, "user", "admin"])].map((r) => (
                      <option key={r} value={r}>
                        {roleName(r, t)}
                      </option>
                    ))}
                  </select>
                </td>
                <td className="hide-sm">{ago(u.createdAt, Date.now(), t)}</td>
                <td>
                  {u.id !== session.data!.user.id && (
                    <div className="row">
                      {u.banned ? (
                        <button type="button" className="secondary" onClick={() => unban.mutate(u.id)}>
                          {t("Unban")}
                        </button>
                      ) : (
                        <button type="button" className="secondary" onClick={() => setBanning(u)}>
                          {t("Ban")}
                        </button>
                      )}
                      <button type="button" className="secondary" onClick={() => impersonate.mutate(u.id)}>
                        {t("Impersonate")}
                      </button>
                      <button type="button" className="secondary" onClick={() => setSessionsOf(u)}>
                        {t("Sessions")}
                      </button>
                      <button type="button" className="secondary" onClick={() => setRemoving(u)}>
                        {t("Remove")}
                      </button>
                    </div>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <div className="row">
          <button type="button" className="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            {t("Previous")}
          </button>
          <span className="muted">
            {total === 0
              ? t("No user")
              : t("{from}–{to} of {total}", {
                  from: (offset + 1).toLocaleString(lang),
                  to: Math.min(offset + PAGE, total).toLocaleString(lang),
                  total: total.toLocaleString(lang),
                })}
          </span>
          <button type="button" className="secondary" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>
            {t("Next")}
          </button>
        </div>
      </section>
      <CreateUser />
      {/* Not for a caller the user list already refused: one sentence says why. */}
      {!(users.error instanceof ApiError && users.error.status === 403) && (
        <section className="card" aria-labelledby="audit-h">
          <h2 id="audit-h">{t("Audit log")}</h2>
          {/* Users this page has listed are named, not shown by id. */}
          <AuditLog me={session.data.user.id} names={Object.fromEntries((users.data?.users ?? []).map((u) => [u.id, u.name]))} />
        </section>
      )}
      {sessionsOf && <UserSessions user={sessionsOf} onClose={() => setSessionsOf(null)} />}
      {banning && <BanDialog user={banning} onClose={() => setBanning(null)} />}
      {changing && (
        <Confirm
          title={t("Make {name} {role}?", { name: changing.name, role: roleName(changing.role, t) })}
          body={
            changing.role === "admin"
              ? t("An administrator can manage every user, {name} included.", { name: changing.name })
              : t("{name} will no longer be able to manage users.", { name: changing.name })
          }
          confirm="Change role"
          action={setRole}
          onClose={() => setChanging(null)}
        />
      )}
      {removing && (
        <Confirm
          title={t("Remove {name}?", { name: removing.name })}
          body="The user, their sessions, sign-in methods and memberships are deleted."
          confirm="Remove user"
          action={remove}
          onClose={() => setRemoving(null)}
        />
      )}
    </main>
  );
}
