"use client";
import { signIn } from "next-auth/react";
import { useState, type FormEvent } from "react";

const INVALID = "Wrong email or password.";

export function LoginForm({ callbackUrl }: { callbackUrl: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  async function onSubmit(event: FormEvent) {
    event.preventDefault();
    setPending(true);
    setError(null);
    try {
      const result = await signIn("credentials", { email, password, redirect: false, callbackUrl });
      if (result?.ok && !result.error) {
        window.location.assign(callbackUrl);
        return;
      }
      if (result?.status === 429 || result?.error === "RateLimited") {
        setError("Too many failed sign-ins for this account. Wait 15 minutes and try again.");
      } else {
        setError(INVALID);
      }
    } catch {
      setError("Sign-in failed: the server did not answer. Try again.");
    }
    setPending(false);
  }

  return (
    <form onSubmit={onSubmit} className="card flex flex-col gap-4" noValidate>
      <div>
        <label htmlFor="email" className="label">
          Email
        </label>
        <input id="email" name="email" type="email" autoComplete="username" required className="input" value={email} onChange={(e) => setEmail(e.target.value)} />
      </div>
      <div>
        <label htmlFor="password" className="label">
          Password
        </label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          className="input"
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "login-error" : undefined}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        {error && (
          <p id="login-error" role="alert" className="field-error">
            {error}
          </p>
        )}
      </div>
      <button type="submit" className="btn-primary" disabled={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
