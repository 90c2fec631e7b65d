import { redirect } from "next/navigation";
import { LoginForm } from "@/components/login-form";
import { currentPrincipal } from "@/lib/auth/session";

export const metadata = { title: "Sign in · Sluice" };

function safeCallback(value: string | string[] | undefined): string {
  const v = Array.isArray(value) ? value[0] : value;
  // Only same-site paths: never an open redirect.
  return v && v.startsWith("/") && !v.startsWith("//") ? v : "/";
}

export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const callbackUrl = safeCallback(params.callbackUrl);
  if (await currentPrincipal()) redirect(callbackUrl);
  return (
    <main className="flex min-h-screen items-center justify-center px-4">
      <div className="w-full max-w-sm">
        <h1 className="mb-1 text-2xl font-semibold tracking-tight text-indigo-700">Sluice</h1>
        <p className="mb-6 text-sm text-slate-600">Sign in to the rate-limit control plane.</p>
        <LoginForm callbackUrl={callbackUrl} />
      </div>
    </main>
  );
}
