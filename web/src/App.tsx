// The app shell: the header (navigation, the active organization switcher, sign-out), the
// "acting as" banner while an administrator impersonates someone, and the stable paths
// mailed links and tenants' apps point at.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, Route, Routes, useNavigate } from "react-router";
import { useFocusFirstInvalid, useFocusOnNavigation, usePageTitle } from "./components/a11y";
import { api, unwrap } from "./api";
import { Logo, SupportLine, useBrandColor } from "./brand";
import { ErrorBox } from "./components/ui";
import { Account } from "./pages/account";
import { Admin } from "./pages/admin";
import { ErrorPage, Home, SignIn, SignUp, TwoFactorPage, VerifyEmail } from "./pages/auth";
import { ForgotPassword, ResetPassword } from "./pages/password";
import { AcceptInvitation, OrganizationPage, Organizations } from "./pages/organizations";
import { SESSION_KEY, useSession, useSessionChanged } from "./session";
import { usePageSettings } from "./settings";

function OrgSwitcher() {
  const session = useSession();
  const qc = useQueryClient();
  const orgs = useQuery({ queryKey: ["orgs"], queryFn: () => unwrap(api.GET("/organization/list")), enabled: !!session.data });
  const setActive = useMutation({
    mutationFn: (organizationId: string | null) => unwrap(api.POST("/organization/set-active", { body: { organizationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  if (!orgs.data?.length) return null;
  return (
    <select
      aria-label="Current organization"
      value={session.data?.session.activeOrganizationId ?? ""}
      disabled={setActive.isPending}
      onChange={(e) => setActive.mutate(e.target.value || null)}
    >
      <option value="">No organization chosen</option>
      {orgs.data.map((o) => (
        <option key={o.id} value={o.id}>
          {o.name}
        </option>
      ))}
    </select>
  );
}

function ImpersonationBanner() {
  const session = useSession();
  const navigate = useNavigate();
  const changed = useSessionChanged();
  const stop = useMutation({
    mutationFn: () => unwrap(api.POST("/admin/stop-impersonating")),
    onSuccess: async () => {
      await changed();
      navigate("/admin");
    },
  });
  if (!session.data?.session.impersonatedBy) return null;
  return (
    <div className="banner" role="status">
      <span>
        Acting as <strong>{session.data.user.name}</strong> ({session.data.user.email})
      </span>
      <button type="button" onClick={() => stop.mutate()} disabled={stop.isPending}>
        Stop impersonating
      </button>
      <ErrorBox error={stop.error} />
    </div>
  );
}

function Header({ app }: { app: string }) {
  const session = useSession();
  const navigate = useNavigate();
  const changed = useSessionChanged();
  const signOut = useMutation({
    mutationFn: () => unwrap(api.POST("/sign-out")),
    onSuccess: async () => {
      await changed();
      navigate("/sign-in");
    },
  });
  const user = session.data?.user;
  const isAdmin = user?.role.split(",").includes("admin");
  return (
    <header className="top">
      <Link to="/" className="brand">
        <Logo />
        {app}
      </Link>
      {user ? (
        <nav aria-label="Main">
          <span className="who" title={user.email}>
            Signed in as <strong>{user.name}</strong>
          </span>
          <Link to="/account">Account</Link>
          <Link to="/organizations">Organizations</Link>
          {isAdmin && <Link to="/admin">Admin</Link>}
          <OrgSwitcher />
          <button type="button" className="secondary" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out
          </button>
        </nav>
      ) : (
        <nav aria-label="Main">
          <Link to="/sign-in">Sign in</Link>
          <Link to="/sign-up">Create account</Link>
        </nav>
      )}
    </header>
  );
}

export function App() {
  const app = usePageSettings().appName;
  usePageTitle(app);
  useBrandColor();
  useFocusOnNavigation();
  useFocusFirstInvalid();
  return (
    <>
      <ImpersonationBanner />
      <Header app={app} />
      <Routes>
        <Route path="/" element={<Home />} />
        <Route path="/sign-in" element={<SignIn />} />
        <Route path="/sign-up" element={<SignUp />} />
        <Route path="/two-factor" element={<TwoFactorPage />} />
        <Route path="/forgot-password" element={<ForgotPassword />} />
        <Route path="/reset-password" element={<ResetPassword />} />
        <Route path="/verify-email" element={<VerifyEmail />} />
        <Route path="/error" element={<ErrorPage />} />
        <Route path="/account" element={<Account />} />
        <Route path="/organizations" element={<Organizations />} />
        <Route path="/organizations/:id" element={<OrganizationPage />} />
        <Route path="/organizations/:id/:tab" element={<OrganizationPage />} />
        <Route path="/accept-invitation/:id" element={<AcceptInvitation />} />
        <Route path="/admin" element={<Admin />} />
        <Route
          path="*"
          element={
            <main className="narrow">
              <h1>Page not found</h1>
              <Link to="/">Back to the start</Link>
            </main>
          }
        />
      </Routes>
      <footer className="page-foot">
        <SupportLine />
      </footer>
    </>
  );
}
