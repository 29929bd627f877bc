// What the pages need to know of the server's configuration (GET /page-settings): the app's
// name, whether a sign-up mails a verification link, the password rules, whether codes and
// links by mail are offered, the origins a sign-in may lead back to. Until it answers
// (or if it cannot), the server's defaults.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./api";

export type PageSettings = Schemas["PageSettings"];
export type PasswordRules = PageSettings["password"];

export const DEFAULT_SETTINGS: PageSettings = {
  appName: "Gatehouse",
  emailVerification: { sendOnSignUp: false, required: false },
  password: { minLength: 8, maxLength: 128 },
  byMail: false,
  trustedOrigins: [],
};

export function usePageSettings(): PageSettings {
  const q = useQuery({
    queryKey: ["page-settings"],
    queryFn: () => unwrap(api.GET("/page-settings")),
    staleTime: Infinity,
    retry: false,
  });
  return q.data ?? DEFAULT_SETTINGS;
}
