// Organizations: the list with the active one and a create form (slug checked as you type),
// your pending invitations, and one organization's console (members, invitations, teams,
// custom roles, settings, and the activity log for owners and admins) whose buttons show only
// what the member's permissions grant (asked once per organization).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { Link, Navigate, NavLink, useNavigate, useParams } from "react-router";
import { api, ApiError, unwrap, type Schemas } from "../api";
import { AuditLog } from "../components/audit";
import { Confirm, ErrorBox, Field, Notice, Submit } from "../components/ui";
import { SESSION_KEY, useSession, useSessionChanged } from "../session";
import { emailProblem } from "./auth";

type Perms = Record<string, string[]>;

/** Everything the signed-in member may do in `orgId`: one request, shared by the page. */
export function usePermissions(orgId: string) {
  return useQuery({
    queryKey: ["permissions", orgId],
    queryFn: () => unwrap(api.GET("/organization/get-member-permissions", { params: { query: { organizationId: orgId } } })),
    staleTime: 30_000,
  });
}

/** Whether the signed-in member may do all of `perms` in `orgId` (from [`usePermissions`]). */
export function useCan(orgId: string, perms: Perms) {
  const granted = usePermissions(orgId).data?.permissions;
  return granted !== undefined && allowed(granted, perms);
}

/** Whether `granted` holds every action of `perms`. */
export function allowed(granted: Perms, perms: Perms): boolean {
  return Object.entries(perms).every(([resource, actions]) => actions.every((a) => (granted[resource] ?? []).includes(a)));
}

export function slugify(name: string): string {
  return name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

const SLUG = /^[a-z0-9_-]{1,64}$/;

/** The slug's availability, asked of the server once typing pauses. */
export function useSlugStatus(slug: string) {
  const [debounced, setDebounced] = useState(slug);
  useEffect(() => {
    const t = setTimeout(() => setDebounced(slug), 300);
    return () => clearTimeout(t);
  }, [slug]);
  const valid = SLUG.test(debounced);
  const q = useQuery({
    queryKey: ["slug", debounced],
    queryFn: () => unwrap(api.POST("/organization/check-slug", { body: { slug: debounced } })),
    enabled: valid,
    retry: false,
  });
  if (!slug) return null;
  if (!SLUG.test(slug)) return "Use 1–64 lowercase letters, digits, - or _.";
  if (debounced !== slug || q.isPending) return "checking";
  return q.isError ? "taken" : "available";
}

function CreateOrganization() {
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [slugEdited, setSlugEdited] = useState(false);
  const status = useSlugStatus(slug);
  const qc = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/create", { body: { name: name.trim(), slug } })),
    onSuccess: async (org) => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate(`/organizations/${org.id}`);
    },
  });
  const slugHint =
    status === "available" ? (
      <span className="muted">✓ {slug} is available</span>
    ) : status === "taken" ? (
      <span className="field-error">That slug is taken.</span>
    ) : status === "checking" ? (
      <span className="muted">Checking…</span>
    ) : null;
  const slugError = status && status !== "available" && status !== "taken" && status !== "checking" ? status : null;
  return (
    <section className="card" aria-labelledby="create-h">
      <h2 id="create-h">Create an organization</h2>
      <form
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (name.trim() && status === "available") create.mutate();
        }}
        noValidate
      >
        <Field
          label="Name"
          name="org-name"
          autoComplete="organization"
          value={name}
          onChange={(v) => {
            setName(v);
            if (!slugEdited) setSlug(slugify(v));
          }}
        />
        <Field
          label="Slug"
          name="org-slug"
          autoComplete="off"
          value={slug}
          onChange={(v) => {
            setSlugEdited(true);
            setSlug(v);
          }}
          hint={slugHint}
          error={slugError}
        />
        <ErrorBox error={create.error} />
        <div>
          <Submit pending={create.isPending} disabled={!name.trim() || status !== "available"}>
            Create organization
          </Submit>
        </div>
      </form>
    </section>
  );
}

function MyInvitations() {
  const qc = useQueryClient();
  const invitations = useQuery({ queryKey: ["user-invitations"], queryFn: () => unwrap(api.GET("/organization/list-user-invitations")), retry: false });
  const pending = (invitations.data ?? []).filter((i) => i.status === "pending");
  if (!pending.length) return null;
  return (
    <section className="card" aria-labelledby="inv-h">
      <h2 id="inv-h">Invitations for you</h2>
      <ul className="list">
        {pending.map((i) => (
          <li key={i.id}>
            <span>
              Role <strong>{i.role}</strong>
            </span>
            <Link to={`/accept-invitation/${i.id}`} onClick={() => qc.invalidateQueries({ queryKey: ["user-invitations"] })}>
              Open
            </Link>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function Organizations() {
  const session = useSession();
  const qc = useQueryClient();
  const orgs = useQuery({ queryKey: ["orgs"], queryFn: () => unwrap(api.GET("/organization/list")), enabled: !!session.data });
  const setActive = useMutation({
    mutationFn: (organizationId: string) => unwrap(api.POST("/organization/set-active", { body: { organizationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  if (session.isPending) return <main>Loading…</main>;
  if (!session.data) return <Navigate to="/sign-in?redirectTo=/organizations" replace />;
  const active = session.data.session.activeOrganizationId;
  return (
    <main>
      <h1>Organizations</h1>
      <section className="card" aria-labelledby="orgs-h">
        <h2 id="orgs-h">Yours</h2>
        <ErrorBox error={orgs.error ?? setActive.error} />
        {orgs.data?.length === 0 && <p className="muted">You are not in any organization yet.</p>}
        <ul className="list">
          {(orgs.data ?? []).map((o) => (
            <li key={o.id}>
              <span>
                <Link to={`/organizations/${o.id}`}>{o.name}</Link> <span className="muted">/{o.slug}</span>{" "}
                {o.id === active && <span className="badge ok">active</span>}
              </span>
              {o.id !== active && (
                <button type="button" className="secondary" disabled={setActive.isPending} onClick={() => setActive.mutate(o.id)}>
                  Make active
                </button>
              )}
            </li>
          ))}
        </ul>
      </section>
      <MyInvitations />
      <CreateOrganization />
    </main>
  );
}

/** The role names assignable here: built-in, configured and this organization's custom roles. */
function useRoleNames(orgId: string) {
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const custom = useQuery({
    queryKey: ["roles", orgId],
    queryFn: () => unwrap(api.GET("/organization/list-roles", { params: { query: { organizationId: orgId } } })),
    retry: false,
  });
  return [...(catalog.data?.roles.map((r) => r.role) ?? ["owner", "admin", "member"]), ...(custom.data ?? []).map((r) => r.role)];
}

function Members({ org, me }: { org: Schemas["FullOrganization"]; me: string }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const roles = useRoleNames(org.id);
  const canUpdate = useCan(org.id, { member: ["update"] });
  const canDelete = useCan(org.id, { member: ["delete"] });
  const [removing, setRemoving] = useState<Schemas["Member"] | null>(null);
  const [leaving, setLeaving] = useState(false);
  const refresh = () => qc.invalidateQueries({ queryKey: ["org", org.id] });
  const setRole = useMutation({
    mutationFn: (v: { memberId: string; role: string }) =>
      unwrap(api.POST("/organization/update-member-role", { body: { organizationId: org.id, memberId: v.memberId, role: v.role } })),
    onSuccess: async () => {
      await refresh();
      await qc.invalidateQueries({ queryKey: ["permissions", org.id] });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/remove-member", { body: { organizationId: org.id, memberIdOrEmail: removing?.id ?? "" } })),
    onSuccess: () => {
      setRemoving(null);
      refresh();
    },
  });
  const leave = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/leave", { body: { organizationId: org.id } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate("/organizations");
    },
  });
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      <ErrorBox error={setRole.error} />
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th className="hide-sm">Email</th>
            <th>Role</th>
            <th>
              <span className="muted">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {org.members.map((m) => (
            <tr key={m.id} data-email={m.user?.email}>
              <td>
                {m.user?.name ?? m.userId} {m.userId === me && <span className="badge">you</span>}
              </td>
              <td className="hide-sm">{m.user?.email}</td>
              <td>
                {canUpdate && m.userId !== me ? (
                  <select
                    aria-label={`Role of ${m.user?.name ?? m.userId}`}
                    value={m.role}
                    disabled={setRole.isPending}
                    onChange={(e) => setRole.mutate({ memberId: m.id, role: e.target.value })}
                  >
                    {[...new Set([m.role, ...roles])].map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                ) : (
                  m.role
                )}
              </td>
              <td>
                {m.userId === me ? (
                  <button type="button" className="secondary" onClick={() => setLeaving(true)}>
                    Leave
                  </button>
                ) : (
                  canDelete && (
                    <button type="button" className="secondary" onClick={() => setRemoving(m)}>
                      Remove
                    </button>
                  )
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {removing && (
        <Confirm
          title="Remove this member?"
          body={`${removing.user?.name ?? removing.userId} will lose access to ${org.name}.`}
          confirm="Remove"
          action={remove}
          onClose={() => setRemoving(null)}
        />
      )}
      {leaving && (
        <Confirm
          title={`Leave ${org.name}?`}
          body="You will lose access until someone invites you again."
          confirm="Leave"
          action={leave}
          onClose={() => setLeaving(false)}
        />
      )}
    </section>
  );
}

function Invitations({ org }: { org: Schemas["FullOrganization"] }) {
  const qc = useQueryClient();
  const roles = useRoleNames(org.id);
  const canInvite = useCan(org.id, { invitation: ["create"] });
  const canCancel = useCan(org.id, { invitation: ["cancel"] });
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("member");
  const [touched, setTouched] = useState(false);
  const list = useQuery({
    queryKey: ["invitations", org.id],
    queryFn: () => unwrap(api.GET("/organization/list-invitations", { params: { query: { organizationId: org.id } } })),
  });
  const invite = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/invite-member", { body: { organizationId: org.id, email: email.trim(), role } })),
    onSuccess: () => {
      setEmail("");
      setTouched(false);
      qc.invalidateQueries({ queryKey: ["invitations", org.id] });
    },
  });
  const cancel = useMutation({
    mutationFn: (invitationId: string) => unwrap(api.POST("/organization/cancel-invitation", { body: { invitationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["invitations", org.id] }),
  });
  return (
    <section className="card" aria-labelledby="invitations-h">
      <h2 id="invitations-h">Invitations</h2>
      {canInvite && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setTouched(true);
            if (!emailProblem(email)) invite.mutate();
          }}
          noValidate
        >
          <Field label="Email to invite" name="invite-email" type="email" autoComplete="off" value={email} onChange={setEmail} error={touched ? emailProblem(email) : null} />
          <label>
            Role
            <select name="invite-role" value={role} onChange={(e) => setRole(e.target.value)}>
              {roles.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </label>
          <ErrorBox error={invite.error} />
          {invite.isSuccess && <Notice>Invitation sent.</Notice>}
          <div>
            <Submit pending={invite.isPending}>Send invitation</Submit>
          </div>
        </form>
      )}
      <ErrorBox error={list.error ?? cancel.error} />
      <ul className="list" aria-label="Invitations">
        {(list.data ?? []).map((i) => (
          <li key={i.id}>
            <span>
              {i.email} · {i.role} · <span className="badge">{i.status}</span>
            </span>
            {canCancel && i.status === "pending" && (
              <button type="button" className="secondary" disabled={cancel.isPending} onClick={() => cancel.mutate(i.id)}>
                Cancel
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function TeamRow({ team, org }: { team: Schemas["TeamWithMemberCount"]; org: Schemas["FullOrganization"] }) {
  const qc = useQueryClient();
  const session = useSession();
  const canUpdate = useCan(org.id, { team: ["update"] });
  const canDelete = useCan(org.id, { team: ["delete"] });
  const [name, setName] = useState(team.name);
  const [open, setOpen] = useState(false);
  const [addUser, setAddUser] = useState("");
  const refresh = () => qc.invalidateQueries({ queryKey: ["org", org.id] });
  const members = useQuery({
    queryKey: ["team-members", team.id],
    queryFn: () => unwrap(api.GET("/organization/list-team-members", { params: { query: { teamId: team.id } } })),
    enabled: open,
    retry: false,
  });
  const rename = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/update-team", { body: { organizationId: org.id, teamId: team.id, data: { name: name.trim() } } })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/remove-team", { body: { organizationId: org.id, teamId: team.id } })),
    onSuccess: refresh,
  });
  const add = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/add-team-member", { body: { organizationId: org.id, teamId: team.id, userId: addUser } })),
    onSuccess: () => {
      setAddUser("");
      refresh();
      qc.invalidateQueries({ queryKey: ["team-members", team.id] });
    },
  });
  const drop = useMutation({
    mutationFn: (userId: string) => unwrap(api.POST("/organization/remove-team-member", { body: { organizationId: org.id, teamId: team.id, userId } })),
    onSuccess: () => {
      refresh();
      qc.invalidateQueries({ queryKey: ["team-members", team.id] });
    },
  });
  const setActive = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/set-active-team", { body: { teamId: team.id } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  const userName = (id: string) => org.members.find((m) => m.userId === id)?.user?.name ?? id;
  const inTeam = new Set((members.data ?? []).map((m) => m.userId));
  const active = session.data?.session.activeTeamId === team.id;
  return (
    <li>
      <div className="stack">
        <div className="row">
          <strong>{team.name}</strong> <span className="muted">{team.memberCount} member(s)</span>
          {active && <span className="badge ok">active team</span>}
          <button type="button" className="link" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
            {open ? "Hide" : "Manage"}
          </button>
        </div>
        {open && (
          <div className="stack">
            {canUpdate && (
              <form
                className="row"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (name.trim()) rename.mutate();
                }}
              >
                <Field label="Team name" name={`team-${team.id}`} value={name} onChange={setName} autoComplete="off" />
                <Submit pending={rename.isPending}>Rename</Submit>
              </form>
            )}
            <ul className="list" aria-label={`Members of ${team.name}`}>
              {(members.data ?? []).map((m) => (
                <li key={m.id}>
                  {userName(m.userId)}
                  {canUpdate && (
                    <button type="button" className="secondary" onClick={() => drop.mutate(m.userId)}>
                      Remove from team
                    </button>
                  )}
                </li>
              ))}
            </ul>
            {canUpdate && (
              <form
                className="row"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (addUser) add.mutate();
                }}
              >
                <label>
                  Add a member
                  <select value={addUser} onChange={(e) => setAddUser(e.target.value)}>
                    <option value="">Choose…</option>
                    {org.members
                      .filter((m) => !inTeam.has(m.userId))
                      .map((m) => (
                        <option key={m.userId} value={m.userId}>
                          {m.user?.name ?? m.userId}
                        </option>
                      ))}
                  </select>
                </label>
                <Submit pending={add.isPending} disabled={!addUser}>
                  Add
                </Submit>
              </form>
            )}
            <div className="row">
              {!active && (
                <button type="button" className="secondary" onClick={() => setActive.mutate()}>
                  Make it my active team
                </button>
              )}
              {canDelete && (
                <button type="button" className="secondary" onClick={() => remove.mutate()}>
                  Delete team
                </button>
              )}
            </div>
            <ErrorBox error={rename.error ?? add.error ?? drop.error ?? remove.error ?? setActive.error ?? members.error} />
          </div>
        )}
      </div>
    </li>
  );
}

function Teams({ org }: { org: Schemas["FullOrganization"] }) {
  const qc = useQueryClient();
  const canCreate = useCan(org.id, { team: ["create"] });
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/create-team", { body: { organizationId: org.id, name: name.trim() } })),
    onSuccess: () => {
      setName("");
      qc.invalidateQueries({ queryKey: ["org", org.id] });
    },
  });
  return (
    <section className="card" aria-labelledby="teams-h">
      <h2 id="teams-h">Teams</h2>
      <ul className="list">
        {org.teams.map((t) => (
          <TeamRow key={t.id} team={t} org={org} />
        ))}
      </ul>
      {canCreate && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim()) create.mutate();
          }}
        >
          <Field label="New team" name="team-name" autoComplete="off" value={name} onChange={setName} />
          <ErrorBox error={create.error} />
          <div>
            <Submit pending={create.isPending} disabled={!name.trim()}>
              Create team
            </Submit>
          </div>
        </form>
      )}
    </section>
  );
}

/** Resource × action checkboxes over the server's permission catalogue. */
export function PermissionGrid(props: {
  resources: Schemas["PermissionCatalog"]["resources"];
  value: Perms;
  onChange: (v: Perms) => void;
}) {
  const toggle = (res: string, act: string, on: boolean) => {
    const set = new Set(props.value[res] ?? []);
    if (on) set.add(act);
    else set.delete(act);
    const next = { ...props.value, [res]: [...set].sort() };
    if (next[res]!.length === 0) delete next[res];
    props.onChange(next);
  };
  return (
    <fieldset>
      <legend>Permissions</legend>
      {props.resources.map((r) => (
        <div key={r.resource} className="row">
          <strong>{r.resource}</strong>
          {r.actions.map((a) => (
            <label key={a} className="check">
              <input type="checkbox" name={`${r.resource}:${a}`} checked={props.value[r.resource]?.includes(a) ?? false} onChange={(e) => toggle(r.resource, a, e.target.checked)} />
              {a}
            </label>
          ))}
        </div>
      ))}
    </fieldset>
  );
}

function RoleEditor({ org, role, onDone }: { org: Schemas["FullOrganization"]; role: Schemas["OrganizationRole"] | null; onDone: () => void }) {
  const qc = useQueryClient();
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const [name, setName] = useState(role?.role ?? "");
  const [perms, setPerms] = useState<Perms>(role?.permission ?? {});
  const save = useMutation({
    mutationFn: () =>
      role
        ? unwrap(
            api.POST("/organization/update-role", {
              body: { organizationId: org.id, roleName: role.role, data: { permission: perms, roleName: name.trim() !== role.role ? name.trim() : null } },
            }),
          )
        : unwrap(api.POST("/organization/create-role", { body: { organizationId: org.id, role: name.trim(), permission: perms } })),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["roles", org.id] });
      onDone();
    },
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim()) save.mutate();
      }}
    >
      <Field label="Role name" name="role-name" autoComplete="off" value={name} onChange={setName} />
      {catalog.data && <PermissionGrid resources={catalog.data.resources} value={perms} onChange={setPerms} />}
      <ErrorBox error={save.error ?? catalog.error} />
      <div className="row">
        <Submit pending={save.isPending} disabled={!name.trim()}>
          {role ? "Save role" : "Create role"}
        </Submit>
        <button type="button" className="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Roles({ org }: { org: Schemas["FullOrganization"] }) {
  const qc = useQueryClient();
  const canCreate = useCan(org.id, { ac: ["create"] });
  const canUpdate = useCan(org.id, { ac: ["update"] });
  const canDelete = useCan(org.id, { ac: ["delete"] });
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const custom = useQuery({
    queryKey: ["roles", org.id],
    queryFn: () => unwrap(api.GET("/organization/list-roles", { params: { query: { organizationId: org.id } } })),
    retry: false,
  });
  const [editing, setEditing] = useState<Schemas["OrganizationRole"] | "new" | null>(null);
  const remove = useMutation({
    mutationFn: (roleName: string) => unwrap(api.POST("/organization/delete-role", { body: { organizationId: org.id, roleName } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["roles", org.id] }),
  });
  const show = (p: Perms) =>
    Object.entries(p)
      .map(([r, a]) => `${r}: ${a.join(", ")}`)
      .join(" · ") || "nothing";
  return (
    <section className="card" aria-labelledby="roles-h">
      <h2 id="roles-h">Roles</h2>
      <ul className="list">
        {(catalog.data?.roles ?? []).map((r) => (
          <li key={r.role}>
            <span>
              <strong>{r.role}</strong> <span className="badge">{r.builtIn ? "built-in" : "configured"}</span>
              <div className="muted">{show(r.permission)}</div>
            </span>
          </li>
        ))}
        {(custom.data ?? []).map((r) => (
          <li key={r.id}>
            <span>
              <strong>{r.role}</strong> <span className="badge">custom</span>
              <div className="muted">{show(r.permission)}</div>
            </span>
            <span className="row">
              {canUpdate && (
                <button type="button" className="secondary" onClick={() => setEditing(r)}>
                  Edit
                </button>
              )}
              {canDelete && (
                <button type="button" className="secondary" disabled={remove.isPending} onClick={() => remove.mutate(r.role)}>
                  Delete
                </button>
              )}
            </span>
          </li>
        ))}
      </ul>
      <ErrorBox error={remove.error ?? custom.error} />
      {editing ? (
        <RoleEditor key={editing === "new" ? "new" : editing.id} org={org} role={editing === "new" ? null : editing} onDone={() => setEditing(null)} />
      ) : (
        canCreate && (
          <p>
            <button type="button" onClick={() => setEditing("new")}>
              New role
            </button>
          </p>
        )
      )}
    </section>
  );
}

function Settings({ org }: { org: Schemas["FullOrganization"] }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const canUpdate = useCan(org.id, { organization: ["update"] });
  const canDelete = useCan(org.id, { organization: ["delete"] });
  const [name, setName] = useState(org.name);
  const [slug, setSlug] = useState(org.slug);
  const [logo, setLogo] = useState(org.logo ?? "");
  const [deleting, setDeleting] = useState(false);
  const update = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/organization/update", {
          body: { organizationId: org.id, data: { name: name.trim(), slug: slug !== org.slug ? slug : null, logo: logo.trim() || null } },
        }),
      ),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["org", org.id] });
      qc.invalidateQueries({ queryKey: ["orgs"] });
    },
  });
  const del = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/delete", { body: { organizationId: org.id } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      navigate("/organizations");
    },
  });
  return (
    <section className="card" aria-labelledby="settings-h">
      <h2 id="settings-h">Settings</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) update.mutate();
        }}
      >
        <Field label="Name" name="org-name" autoComplete="organization" value={name} onChange={setName} disabled={!canUpdate} />
        <Field label="Slug" name="org-slug" autoComplete="off" value={slug} onChange={setSlug} disabled={!canUpdate} />
        <Field label="Logo URL" name="org-logo" type="url" autoComplete="off" value={logo} onChange={setLogo} disabled={!canUpdate} />
        <ErrorBox error={update.error} />
        {update.isSuccess && <Notice>Saved.</Notice>}
        {canUpdate && (
          <div>
            <Submit pending={update.isPending}>Save</Submit>
          </div>
        )}
      </form>
      {canDelete && (
        <p>
          <button type="button" className="danger" onClick={() => setDeleting(true)}>
            Delete organization…
          </button>
        </p>
      )}
      {deleting && (
        <Confirm
          title={`Delete ${org.name}?`}
          body="Members, teams, roles and invitations are deleted with it. This cannot be undone."
          confirm="Delete organization"
          action={del}
          onClose={() => setDeleting(false)}
        />
      )}
    </section>
  );
}

const TABS = ["members", "invitations", "teams", "roles", "settings"] as const;

/** The sections; "Activity" (the organization's audit log) for those who may update it. */
function OrgTabs({ orgId, tab }: { orgId: string; tab: string }) {
  const canRead = useCan(orgId, { organization: ["update"] });
  const tabs: string[] = canRead ? [...TABS, "activity"] : [...TABS];
  return (
    <nav className="tabs" aria-label="Organization sections">
      {tabs.map((t) => (
        <NavLink key={t} to={`/organizations/${orgId}/${t}`} className={() => (t === tab ? "active" : "")}>
          {t[0]!.toUpperCase() + t.slice(1)}
        </NavLink>
      ))}
    </nav>
  );
}

export function OrganizationPage() {
  const { id = "", tab = "members" } = useParams();
  const session = useSession();
  const org = useQuery({
    queryKey: ["org", id],
    queryFn: () => unwrap(api.GET("/organization/get-full-organization", { params: { query: { organizationId: id } } })),
    enabled: !!session.data,
    retry: false,
  });
  if (session.isPending) return <main>Loading…</main>;
  if (!session.data) return <Navigate to={`/sign-in?redirectTo=/organizations/${id}`} replace />;
  if (org.isPending) return <main>Loading…</main>;
  if (!org.data)
    return (
      <main>
        <ErrorBox error={org.error} />
        <Link to="/organizations">Back to your organizations</Link>
      </main>
    );
  const o = org.data;
  return (
    <main>
      <p className="muted">
        <Link to="/organizations">Organizations</Link> /
      </p>
      <h1>{o.name}</h1>
      <OrgTabs orgId={o.id} tab={tab} />
      {tab === "members" && <Members org={o} me={session.data.user.id} />}
      {tab === "invitations" && <Invitations org={o} />}
      {tab === "teams" && <Teams org={o} />}
      {tab === "roles" && <Roles org={o} />}
      {tab === "settings" && <Settings org={o} key={o.name + o.slug} />}
      {tab === "activity" && (
        <section className="card" aria-label="Activity">
          <AuditLog organizationId={o.id} me={session.data.user.id} names={Object.fromEntries(o.members.flatMap((m) => (m.user ? [[m.userId, m.user.name]] : [])))} />
        </section>
      )}
    </main>
  );
}

/** Where invitation mails point: answer it signed in, or sign in / up and come back. */
export function AcceptInvitation() {
  const { id = "" } = useParams();
  const session = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const here = `/accept-invitation/${id}`;
  const invitation = useQuery({
    queryKey: ["invitation", id],
    queryFn: () => unwrap(api.GET("/organization/get-invitation", { params: { query: { id } } })),
    enabled: !!session.data,
    retry: false,
  });
  const accept = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/accept-invitation", { body: { invitationId: id } })),
    onSuccess: async (a) => {
      await qc.invalidateQueries({ queryKey: SESSION_KEY });
      await qc.invalidateQueries({ queryKey: ["orgs"] });
      navigate(`/organizations/${a.invitation.organizationId}`);
    },
  });
  const reject = useMutation({
    mutationFn: () => unwrap(api.POST("/organization/reject-invitation", { body: { invitationId: id } })),
  });
  const email = new URLSearchParams(window.location.search).get("email") ?? "";
  const changed = useSessionChanged();
  const signOut = useMutation({
    mutationFn: () => unwrap(api.POST("/sign-out")),
    onSuccess: changed,
  });
  const otherRecipient =
    invitation.error instanceof ApiError && invitation.error.code === "YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION";
  if (session.isPending) return <main className="narrow">Loading…</main>;
  if (!session.data) {
    const q = new URLSearchParams({ redirectTo: here, ...(email ? { email } : {}) }).toString();
    return (
      <main className="narrow">
        <div className="card stack">
          <h1>You are invited</h1>
          <p>Sign in, or create an account with the address the invitation was sent to, to answer it.</p>
          <div className="row">
            <Link to={`/sign-in?${q}`}>Sign in</Link>
            <Link to={`/sign-up?${q}`}>Create an account</Link>
          </div>
        </div>
      </main>
    );
  }
  const inv = invitation.data;
  return (
    <main className="narrow">
      <div className="card stack">
        <h1>Invitation</h1>
        {invitation.isPending && <p>Loading…</p>}
        <ErrorBox error={invitation.error} />
        {inv && (
          <>
            <p>
              <strong>{inv.inviterEmail}</strong> invites you to join <strong>{inv.organizationName}</strong> as <strong>{inv.role}</strong>.
            </p>
            {inv.status !== "pending" ? (
              <p className="muted">This invitation is {inv.status}.</p>
            ) : reject.isSuccess ? (
              <Notice>You declined the invitation.</Notice>
            ) : (
              <div className="row">
                <button type="button" disabled={accept.isPending} aria-busy={accept.isPending} onClick={() => accept.mutate()}>
                  {accept.isPending ? "Please wait…" : "Accept"}
                </button>
                <button type="button" className="secondary" disabled={reject.isPending} onClick={() => reject.mutate()}>
                  Decline
                </button>
              </div>
            )}
          </>
        )}
        <ErrorBox error={accept.error ?? reject.error} />
        <p className="muted">Signed in as {session.data.user.email}.</p>
        {otherRecipient && (
          <p>
            <button type="button" className="secondary" disabled={signOut.isPending} onClick={() => signOut.mutate()}>
              Sign out and use the invited account
            </button>
          </p>
        )}
      </div>
    </main>
  );
}
