// The app shell: the header (navigation, the active organization switcher, sign-out), the
// "acting as" banner while an administrator impersonates someone, and the stable paths
// mailed links and tenants' apps point at.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, Route, Routes, useNavigate } from "react-router";
import { useFocusFirstInvalid, useFocusOnNavigation, usePageTitle } from "./components/a11y";
import { api, unwrap } from "./api";
import { Logo, SupportLine, useBrandColor } from "./brand";
import { ErrorBox } from "./components/ui";
import { LanguageSwitcher, useT, useTx } from "./i18n";
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
  const t = useT();
  const orgs = useQuery({ queryKey: ["orgs"], queryFn: () => unwrap(api.GET("/organization/list")), enabled: !!session.data });
  const setActive = useMutation({
    mutationFn: (organizationId: string | null) => unwrap(api.POST("/organization/set-active", { body: { organizationId } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  if (!orgs.data?.length) return null;
  return (
    <select
      aria-label={t("Current organization")}
      value={session.data?.session.activeOrganizationId ?? ""}
      disabled={setActive.isPending}
      onChange={(e) => setActive.mutate(e.target.value || null)}
    >
      <option value="">{t("No organization chosen")}</option>
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
  const tx = useTx();
  const t = useT();
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
        {tx("Acting as {name} ({email})", { name: <strong>{session.data.user.name}</strong>, email: session.data.user.email })}
      </span>
      <button type="button" onClick={() => stop.mutate()} disabled={stop.isPending}>
        {t("Stop impersonating")}
      </button>
      <ErrorBox error={stop.error} />
    </div>
  );
}

function Header({ app }: { app: string }) {
  const session = useSession();
  const t = useT();
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
        <nav aria-label={t("Main")}>
          <span className="who" title={user.email}>
            {t("Signed in as")} <strong>{user.name}</strong>
          </span>
          <Link to="/account">{t("Account")}</Link>
          <Link to="/organizations">{t("Organizations")}</Link>
          {isAdmin && <Link to="/admin">{t("Admin")}</Link>}
          <OrgSwitcher />
          <button type="button" className="secondary" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            {t("Sign out")}
          </button>
          <LanguageSwitcher />
        </nav>
      ) : (
        <nav aria-label={t("Main")}>
          <Link to="/sign-in">{t("Sign in")}</Link>
          <Link to="/sign-up">{t("Create account")}</Link>
          <LanguageSwitcher />
        </nav>
      )}
    </header>
  );
}

export function App() {
  const app = usePageSettings().appName;
  const t = useT();
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
              <h1>{t("Page not found")}</h1>
              <Link to="/">{t("Back to the start")}</Link>
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
