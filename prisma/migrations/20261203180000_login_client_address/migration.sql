-- The login lockout is keyed by account and client address (docs/security.md).
-- AlterTable
ALTER TABLE "LoginAttempt" ADD COLUMN "clientAddress" TEXT;
