import { TenantNotFound } from "@/components/tenant-not-found";

export default function NotFound() {
  return <TenantNotFound />;
}
