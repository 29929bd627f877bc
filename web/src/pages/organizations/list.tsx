// The organizations list with the active one, the create form (slug checked as you type),
// your pending invitations, and accepting one from its link.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, Navigate, useNavigate, useParams } from "react-router";
import { api, ApiError, unwrap } from "../../api";
import { ErrorBox, Field, Notice, Submit } from "../../components/ui";
import { SESSION_KEY, useSession, useSessionChanged } from "../../session";
import { slugify, useSlugStatus } from "./hooks";

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
  // Invitations wait for a verified address: say so rather than show nothing.
  const unverified = invitations.error instanceof ApiError && invitations.error.code === "EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION";
  if (unverified)
    return (
      <section className="card" aria-labelledby="inv-h">
        <h2 id="inv-h">Invitations for you</h2>
        <p className="muted">
          Invitations sent to your address show here once it is verified. <Link to="/account">Verify it from your account page</Link>.
        </p>
      </section>
    );
  if (!pending.length) return null;
  return (
    <section className="card" aria-labelledby="inv-h">
      <h2 id="inv-h">Invitations for you</h2>
      <ul className="list">
        {pending.map((i) => (
          <li key={i.id}>
            <span>
              <strong>{i.organizationName}</strong> invites you as <strong>{i.role}</strong>
            </span>
            <Link to={`/accept-invitation/${i.id}`} aria-label={`Open the invitation to ${i.organizationName}`} onClick={() => qc.invalidateQueries({ queryKey: ["user-invitations"] })}>
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
                {o.id === active && <span className="badge ok">current</span>}
              </span>
              {o.id !== active && (
                <button type="button" className="secondary" aria-label={`Switch to ${o.name}`} disabled={setActive.isPending} onClick={() => setActive.mutate(o.id)}>
                  Switch to it
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
      navigate(`/organizations/${a.invitation.organizationId}`, { state: { joined: invitation.data?.organizationName ?? null } });
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
          <h1>Your invitation</h1>
          <p>Sign in, or create an account with the address the invitation was sent to, to see who invites you and to answer it.</p>
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
