/**
 * Proves that the hand-written SQL in prisma/migrations builds exactly the database that
 * prisma/schema.prisma describes (what `prisma migrate diff` would check, had we its engine):
 * every model's table and nothing else, every scalar field's column with its type, nullability and
 * default, every primary key, unique and plain index with Prisma's names, every foreign key with
 * its referential actions, and every enum with its labels.
 *
 * The schema is parsed here (the Prisma 7 runtime data model carries no nullability, indexes or
 * enum values); the parse is itself checked against the generated client's runtime data model and
 * enums, so a parser slip cannot hide drift.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import * as generatedEnums from "../generated/prisma/enums";
import { createDb } from "./client";

const SCHEMA_PATH = fileURLToPath(new URL("../../prisma/schema.prisma", import.meta.url));

/**
 * Indexes that schema.prisma cannot express (partial, covering), created only by migration SQL.
 * Each is listed here with its exact definition, so the drift test still catches any other index,
 * a missing one, or one whose definition changed. Keep the list short: every entry is a query plan
 * someone measured (bench/dashboards.ts).
 */
const SQL_ONLY_INDEXES: readonly { table: string; name: string; definition: string }[] = [
  {
    table: "UsageRollup",
    name: "UsageRollup_keys_idx",
    definition: `CREATE INDEX "UsageRollup_keys_idx" ON public."UsageRollup" USING btree (granularity, "bucketStart") INCLUDE (tenant, "keyPrefix", tier, outcome, count) WHERE ("keyPrefix" <> ''::text)`,
  },
  {
    table: "UsageRollup",
    name: "UsageRollup_tenant_rows_idx",
    definition: `CREATE INDEX "UsageRollup_tenant_rows_idx" ON public."UsageRollup" USING btree (granularity, "bucketStart") INCLUDE (tenant, tier, outcome, count) WHERE (("keyPrefix" = ''::text) AND (tenant !~~ '*:%'::text))`,
  },
  {
    table: "Rollout",
    name: "Rollout_one_active_idx",
    definition: `CREATE UNIQUE INDEX "Rollout_one_active_idx" ON public."Rollout" USING btree ("liveVersion") WHERE (state = ANY (ARRAY['running'::text, 'paused'::text]))`,
  },
  {
    table: "ApprovalRequest",
    name: "ApprovalRequest_one_pending_idx",
    definition: `CREATE UNIQUE INDEX "ApprovalRequest_one_pending_idx" ON public."ApprovalRequest" USING btree (state) WHERE (state = 'pending'::text)`,
  },
];

// ---------------------------------------------------------------------------------------------
// A parser for the subset of the Prisma schema language this project uses (no @map, no @db.*).

interface Field {
  name: string;
  type: string;
  isList: boolean;
  isOptional: boolean;
  /** The raw attribute text after the type, e.g. `@id @default(autoincrement())`. */
  attributes: string;
}

interface Model {
  name: string;
  fields: Field[];
  /** Block attributes: `@@id([a, b])`, `@@unique([...])`, `@@index([...])`. */
  blockAttributes: { kind: "id" | "unique" | "index"; fields: string[] }[];
}

interface Schema {
  models: Model[];
  enums: Map<string, string[]>;
}

const SCALARS = new Set(["String", "Int", "BigInt", "Boolean", "DateTime", "Json", "Float", "Decimal", "Bytes"]);

function stripComment(line: string): string {
  // `//` never appears inside a string literal in this schema's attribute arguments.
  const i = line.indexOf("//");
  return (i >= 0 ? line.slice(0, i) : line).trim();
}

function parseSchema(text: string): Schema {
  const models: Model[] = [];
  const enums = new Map<string, string[]>();
  const blockRe = /^(model|enum)\s+(\w+)\s*\{([\s\S]*?)^\}/gm;
  for (const block of text.matchAll(blockRe)) {
    const [, kind, name, body] = block as unknown as [string, "model" | "enum", string, string];
    const lines = body.split("\n").map(stripComment).filter(Boolean);
    if (kind === "enum") {
      enums.set(name, lines);
      continue;
    }
    const model: Model = { name, fields: [], blockAttributes: [] };
    for (const line of lines) {
      const block = /^@@(id|unique|index)\(\s*\[([^\]]*)\]/.exec(line);
      if (block) {
        const fields = block[2]!.split(",").map((f) => f.trim()).filter(Boolean);
        model.blockAttributes.push({ kind: block[1] as "id" | "unique" | "index", fields });
        continue;
      }
      if (line.startsWith("@@")) throw new Error(`${name}: unsupported block attribute ${line}`);
      const field = /^(\w+)\s+(\w+)(\[\])?(\?)?\s*(.*)$/.exec(line);
      if (!field) throw new Error(`${name}: cannot parse line ${JSON.stringify(line)}`);
      if (/@map\(|@db\./.test(field[5]!)) throw new Error(`${name}.${field[1]}: @map/@db.* not supported by this test`);
      model.fields.push({
        name: field[1]!,
        type: field[2]!,
        isList: field[3] === "[]",
        isOptional: field[4] === "?",
        attributes: field[5]!,
      });
    }
    models.push(model);
  }
  return { models, enums };
}

// ---------------------------------------------------------------------------------------------
// What Prisma's migration engine would create for a parsed schema (PostgreSQL connector).

interface ExpectedColumn {
  column: string;
  dataType: string;
  udtName: string;
  nullable: boolean;
  datetimePrecision: number | null;
  /** A regular expression the column_default must match, or null for "no default". */
  defaultPattern: RegExp | null;
}

interface ExpectedIndex {
  name: string;
  columns: string[];
  unique: boolean;
  primary: boolean;
}

interface ExpectedForeignKey {
  name: string;
  columns: string[];
  refTable: string;
  refColumns: string[];
  onDelete: string;
  onUpdate: string;
}

const PG_TYPES: Record<string, { dataType: string; udtName: string; precision: number | null }> = {
  String: { dataType: "text", udtName: "text", precision: null },
  Int: { dataType: "integer", udtName: "int4", precision: null },
  BigInt: { dataType: "bigint", udtName: "int8", precision: null },
  Boolean: { dataType: "boolean", udtName: "bool", precision: null },
  DateTime: { dataType: "timestamp without time zone", udtName: "timestamp", precision: 3 },
  Json: { dataType: "jsonb", udtName: "jsonb", precision: null },
  Float: { dataType: "double precision", udtName: "float8", precision: null },
};

const REFERENTIAL_ACTIONS: Record<string, string> = {
  Cascade: "CASCADE",
  Restrict: "RESTRICT",
  NoAction: "NO ACTION",
  SetNull: "SET NULL",
  SetDefault: "SET DEFAULT",
};

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function expectedDefault(field: Field, enumNames: Set<string>): RegExp | null {
  const m = /@default\((.*)\)/.exec(field.attributes);
  if (!m) return null;
  const value = m[1]!.trim();
  if (value === "autoincrement()") return /^nextval\('"[A-Za-z]+_[A-Za-z]+_seq"'::regclass\)$/;
  if (value === "now()") return /^CURRENT_TIMESTAMP$/;
  if (/^-?\d+$/.test(value)) return new RegExp(`^${escapeRegExp(value)}$`);
  if (value === "true" || value === "false") return new RegExp(`^${value}$`);
  const str = /^"(.*)"$/.exec(value);
  if (str) return new RegExp(`^'${escapeRegExp(str[1]!)}'::text$`);
  if (enumNames.has(field.type)) return new RegExp(`^'${escapeRegExp(value)}'::"${field.type}"$`);
  throw new Error(`${field.name}: unsupported @default(${value})`);
}

function expectedColumns(model: Model, schema: Schema): ExpectedColumn[] {
  const enumNames = new Set(schema.enums.keys());
  return model.fields
    .filter((f) => SCALARS.has(f.type) || enumNames.has(f.type))
    .map((f) => {
      const isEnum = enumNames.has(f.type);
      const base = isEnum ? { dataType: "USER-DEFINED", udtName: f.type, precision: null } : PG_TYPES[f.type];
      if (!base) throw new Error(`${model.name}.${f.name}: no PostgreSQL mapping for ${f.type}`);
      return {
        column: f.name,
        dataType: f.isList ? "ARRAY" : base.dataType,
        udtName: f.isList ? `_${base.udtName}` : base.udtName,
        // Prisma never adds NOT NULL to scalar list columns (TEXT[]); it treats NULL as [] itself.
        nullable: f.isOptional || f.isList,
        datetimePrecision: f.isList ? null : base.precision,
        defaultPattern: expectedDefault(f, enumNames),
      };
    });
}

function expectedIndexes(model: Model): ExpectedIndex[] {
  const indexes: ExpectedIndex[] = [];
  const idFields = model.fields.filter((f) => /@id\b/.test(f.attributes)).map((f) => f.name);
  const blockId = model.blockAttributes.find((b) => b.kind === "id");
  const pk = blockId ? blockId.fields : idFields;
  if (pk.length === 0) throw new Error(`${model.name} has no @id`);
  indexes.push({ name: `${model.name}_pkey`, columns: pk, unique: true, primary: true });
  for (const f of model.fields) {
    if (/@unique\b/.test(f.attributes)) {
      indexes.push({ name: `${model.name}_${f.name}_key`, columns: [f.name], unique: true, primary: false });
    }
  }
  for (const b of model.blockAttributes) {
    if (b.kind === "unique") {
      indexes.push({ name: `${model.name}_${b.fields.join("_")}_key`, columns: b.fields, unique: true, primary: false });
    } else if (b.kind === "index") {
      indexes.push({ name: `${model.name}_${b.fields.join("_")}_idx`, columns: b.fields, unique: false, primary: false });
    }
  }
  return indexes;
}

function listArg(attributes: string, arg: string): string[] | undefined {
  const m = new RegExp(`${arg}:\\s*\\[([^\\]]*)\\]`).exec(attributes);
  return m ? m[1]!.split(",").map((s) => s.trim()).filter(Boolean) : undefined;
}

function expectedForeignKeys(model: Model): ExpectedForeignKey[] {
  const fks: ExpectedForeignKey[] = [];
  for (const f of model.fields) {
    const relation = /@relation\((.*)\)/.exec(f.attributes);
    const columns = relation ? listArg(relation[1]!, "fields") : undefined;
    if (!relation || !columns) continue; // the back-relation side holds no column
    const refColumns = listArg(relation[1]!, "references") ?? [];
    const scalarsOptional = model.fields.filter((c) => columns.includes(c.name)).some((c) => c.isOptional);
    const onDelete = /onDelete:\s*(\w+)/.exec(relation[1]!)?.[1] ?? (scalarsOptional ? "SetNull" : "Restrict");
    const onUpdate = /onUpdate:\s*(\w+)/.exec(relation[1]!)?.[1] ?? "Cascade";
    fks.push({
      name: `${model.name}_${columns.join("_")}_fkey`,
      columns,
      refTable: f.type,
      refColumns,
      onDelete: REFERENTIAL_ACTIONS[onDelete]!,
      onUpdate: REFERENTIAL_ACTIONS[onUpdate]!,
    });
  }
  return fks;
}

// ---------------------------------------------------------------------------------------------
// What the migrated database actually has.

const columnRow = z.object({
  table_name: z.string(),
  column_name: z.string(),
  data_type: z.string(),
  udt_name: z.string(),
  is_nullable: z.enum(["YES", "NO"]),
  datetime_precision: z.number().nullable(),
  column_default: z.string().nullable(),
});
const indexRow = z.object({
  table_name: z.string(),
  index_name: z.string(),
  is_unique: z.boolean(),
  is_primary: z.boolean(),
  definition: z.string(),
  columns: z.array(z.string()),
});
const fkRow = z.object({
  table_name: z.string(),
  name: z.string(),
  ref_table: z.string(),
  columns: z.array(z.string()),
  ref_columns: z.array(z.string()),
  on_delete: z.string(),
  on_update: z.string(),
});
const enumRow = z.object({ type_name: z.string(), labels: z.array(z.string()) });

const ACTION_CODES: Record<string, string> = {
  a: "NO ACTION",
  r: "RESTRICT",
  c: "CASCADE",
  n: "SET NULL",
  d: "SET DEFAULT",
};

interface Actual {
  tables: string[];
  columns: z.infer<typeof columnRow>[];
  indexes: z.infer<typeof indexRow>[];
  foreignKeys: z.infer<typeof fkRow>[];
  enums: z.infer<typeof enumRow>[];
}

async function describeDatabase(url: string): Promise<Actual> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const tables = await client.query(
      `SELECT table_name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations'`,
    );
    const columns = await client.query(
      `SELECT table_name, column_name, data_type, udt_name, is_nullable, datetime_precision::int AS datetime_precision, column_default
       FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`,
    );
    const indexes = await client.query(
      `SELECT t.relname::text AS table_name, i.relname::text AS index_name, ix.indisunique AS is_unique,
              ix.indisprimary AS is_primary, pg_get_indexdef(ix.indexrelid) AS definition,
              array_agg(a.attname::text ORDER BY k.ord) AS columns
       FROM pg_index ix
       JOIN pg_class i ON i.oid = ix.indexrelid
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       WHERE n.nspname = 'public' AND t.relname <> '_prisma_migrations'
       GROUP BY t.relname, i.relname, ix.indisunique, ix.indisprimary, ix.indexrelid`,
    );
    const foreignKeys = await client.query(
      `SELECT cl.relname::text AS table_name, c.conname::text AS name, rc.relname::text AS ref_table,
              c.confdeltype::text AS on_delete, c.confupdtype::text AS on_update,
              (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS columns,
              (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS ref_columns
       FROM pg_constraint c
       JOIN pg_class cl ON cl.oid = c.conrelid
       JOIN pg_class rc ON rc.oid = c.confrelid
       JOIN pg_namespace n ON n.oid = cl.relnamespace
       WHERE c.contype = 'f' AND n.nspname = 'public'`,
    );
    const enums = await client.query(
      `SELECT t.typname::text AS type_name, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
       FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid JOIN pg_namespace n ON n.oid = t.typnamespace
       WHERE n.nspname = 'public' GROUP BY t.typname`,
    );
    return {
      tables: z.array(z.object({ table_name: z.string() })).parse(tables.rows).map((r) => r.table_name),
      columns: z.array(columnRow).parse(columns.rows),
      indexes: z.array(indexRow).parse(indexes.rows),
      foreignKeys: z
        .array(fkRow)
        .parse(foreignKeys.rows)
        .map((fk) => ({ ...fk, on_delete: ACTION_CODES[fk.on_delete]!, on_update: ACTION_CODES[fk.on_update]! })),
      enums: z.array(enumRow).parse(enums.rows),
    };
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------

const runtimeDataModel = z.object({
  models: z.record(
    z.string(),
    z.object({
      fields: z.array(z.object({ name: z.string(), kind: z.enum(["scalar", "enum", "object"]), type: z.string() })),
    }),
  ),
});

let schema: Schema;
let actual: Actual;
let db: FreshDatabase;

beforeAll(async () => {
  schema = parseSchema(await readFile(SCHEMA_PATH, "utf8"));
  db = await freshDatabase(); // created and migrated by lib/db/migrate.ts
  actual = await describeDatabase(db.url);
});

afterAll(async () => {
  await db?.drop();
});

describe("schema.prisma parse (guards the drift checks below)", () => {
  it("sees exactly the models, fields and field types of the generated client's runtime data model", async () => {
    const client = createDb("postgresql://unused@127.0.0.1:1/unused"); // never connects
    const dmmf = runtimeDataModel.parse((client as unknown as { _runtimeDataModel: unknown })._runtimeDataModel);
    const fromClient = Object.entries(dmmf.models).map(([name, m]) => ({
      name,
      fields: m.fields.map((f) => `${f.name}:${f.type}:${f.kind === "object" ? "object" : "column"}`),
    }));
    const enumNames = new Set(schema.enums.keys());
    const fromParse = schema.models.map((m) => ({
      name: m.name,
      fields: m.fields.map(
        (f) => `${f.name}:${f.type}:${SCALARS.has(f.type) || enumNames.has(f.type) ? "column" : "object"}`,
      ),
    }));
    expect(fromParse).toEqual(fromClient);
    expect(schema.models.length).toBeGreaterThan(10);
  });

  it("sees exactly the enums and labels of the generated client", () => {
    const fromClient = Object.fromEntries(
      Object.entries(generatedEnums)
        .filter(([, v]) => typeof v === "object" && v !== null)
        .map(([name, v]) => [name, Object.values(v as Record<string, string>)]),
    );
    expect(Object.fromEntries(schema.enums)).toEqual(fromClient);
  });
});

describe("the migrated database matches schema.prisma", () => {
  it("has a table for every model and no other table", () => {
    expect([...actual.tables].sort()).toEqual(schema.models.map((m) => m.name).sort());
  });

  it("has every enum with its labels in order, and no other enum", () => {
    const fromDb = Object.fromEntries(actual.enums.map((e) => [e.type_name, e.labels]));
    expect(fromDb).toEqual(Object.fromEntries(schema.enums));
  });

  it("gives every model exactly its scalar fields as columns, with type, precision, nullability and default", () => {
    for (const model of schema.models) {
      const expected = expectedColumns(model, schema);
      const columns = actual.columns.filter((c) => c.table_name === model.name);
      expect(columns.map((c) => c.column_name).sort(), `columns of ${model.name}`).toEqual(
        expected.map((c) => c.column).sort(),
      );
      for (const want of expected) {
        const got = columns.find((c) => c.column_name === want.column)!;
        const where = `${model.name}.${want.column}`;
        expect({ type: got.data_type, udt: got.udt_name, nullable: got.is_nullable === "YES" }, where).toEqual({
          type: want.dataType,
          udt: want.udtName,
          nullable: want.nullable,
        });
        if (want.datetimePrecision !== null) expect(got.datetime_precision, `${where} precision`).toBe(want.datetimePrecision);
        if (want.defaultPattern === null) expect(got.column_default, `${where} has no default`).toBeNull();
        else expect(got.column_default ?? "(no default)", `${where} default`).toMatch(want.defaultPattern);
      }
    }
  });

  it("has every primary key, @unique, @@unique and @@index under Prisma's names, and no other index", () => {
    const expected = schema.models.flatMap((model) =>
      expectedIndexes(model).map((i) => ({ table: model.name, ...i })),
    );
    const sqlOnly = new Set(SQL_ONLY_INDEXES.map((i) => i.name));
    const got = actual.indexes.filter((i) => !sqlOnly.has(i.index_name)).map((i) => ({
      table: i.table_name,
      name: i.index_name,
      columns: i.columns,
      unique: i.is_unique,
      primary: i.is_primary,
    }));
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(got.sort(byName)).toEqual(expected.sort(byName));
  });

  it("has each SQL-only index (partial, covering) exactly as listed, on its table", () => {
    for (const want of SQL_ONLY_INDEXES) {
      const got = actual.indexes.find((i) => i.index_name === want.name);
      expect(got, `${want.name} exists`).toBeDefined();
      expect(got!.table_name).toBe(want.table);
      expect(got!.definition).toBe(want.definition);
    }
  });

  it("has every relation as a foreign key with its ON DELETE / ON UPDATE, and no other foreign key", () => {
    const expected = schema.models.flatMap((model) => expectedForeignKeys(model).map((fk) => ({ table: model.name, ...fk })));
    const got = actual.foreignKeys.map((fk) => ({
      table: fk.table_name,
      name: fk.name,
      columns: fk.columns,
      refTable: fk.ref_table,
      refColumns: fk.ref_columns,
      onDelete: fk.on_delete,
      onUpdate: fk.on_update,
    }));
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(expected.length).toBeGreaterThan(0);
    expect(got.sort(byName)).toEqual(expected.sort(byName));
  });

  it("round-trips a row through the generated Prisma client on every model", async () => {
    // The strongest check that the client and the tables agree: Prisma itself reads and writes them.
    const prisma = createDb(db.url);
    try {
      const tier = await prisma.tier.create({ data: { id: "tier_drift", name: "drift" } });
      await prisma.limit.create({
        data: { id: "lim_drift", tierId: tier.id, operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 5, windowMs: 1000 },
      });
      await prisma.quota.create({ data: { id: "q_drift", tierId: tier.id, operation: "*", period: "month", limit: 10n ** 12n } });
      const tenant = await prisma.tenant.create({ data: { id: "ten_drift", slug: "drift", name: "Drift", tierId: tier.id } });
      await prisma.tenantOverride.create({ data: { id: "ov_drift", tenantId: tenant.id, operation: "export", limit: 7n } });
      await prisma.apiKey.create({ data: { id: "key_drift", tenantId: tenant.id, name: "ci", hash: "h".repeat(64), prefix: "sk_test" } });
      await prisma.user.create({ data: { id: "usr_drift", email: "drift@example.com", passwordHash: "x", role: "admin" } });
      await prisma.loginAttempt.create({ data: { email: "drift@example.com", succeeded: false } });
      await prisma.apiToken.create({ data: { id: "tok_drift", kind: "service", name: "gw", hash: "t".repeat(64), prefix: "st_" } });
      await prisma.policySettings.create({ data: {} });
      await prisma.operation.create({ data: { id: "op_drift", name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] } });
      await prisma.globalCap.create({ data: { id: "gc_drift", operation: "export", limit: 50, windowMs: 60_000 } });
      await prisma.policyVersion.create({ data: { version: 1, document: { tiers: [] }, checksum: "c", author: "test" } });
      await prisma.auditEntry.create({ data: { actor: "test", action: "create", entity: "tier", after: { name: "drift" } } });
      const bucketStart = new Date("2026-12-02T10:00:00.123Z");
      await prisma.usageRollup.create({
        data: { bucketStart, granularity: "minute", tenant: "drift", tier: "drift", operation: "*", outcome: "allowed", count: 3n },
      });
      await prisma.quotaUsage.create({ data: { tenant: "drift", quotaId: "q_drift", period: "2026-12", used: 1n } });
      await prisma.rollupCursor.create({ data: { sliceKey: "slice" } });

      const read = await prisma.tenant.findUniqueOrThrow({
        where: { slug: "drift" },
        include: { tier: { include: { limits: true, quotas: true } }, overrides: true, apiKeys: true },
      });
      expect(read.status).toBe("active");
      expect(read.tier.quotas[0]?.limit).toBe(10n ** 12n);
      expect(read.apiKeys).toHaveLength(1);
      expect((await prisma.operation.findUniqueOrThrow({ where: { name: "orders-read" } })).match).toEqual([
        "GET /v1/orders",
        "GET /v1/orders/*",
      ]);
      expect((await prisma.usageRollup.findFirstOrThrow()).bucketStart.toISOString()).toBe(bucketStart.toISOString());
      expect((await prisma.policySettings.findUniqueOrThrow({ where: { id: 1 } })).defaultFailureMode).toBe("open");
      expect((await prisma.apiToken.findUniqueOrThrow({ where: { id: "tok_drift" } })).role).toBe("admin");
      // Relations behave as declared: a tier with tenants cannot go (Restrict), a tenant takes its keys along (Cascade).
      await expect(prisma.tier.delete({ where: { id: tier.id } })).rejects.toThrow();
      await prisma.tenant.delete({ where: { id: tenant.id } });
      expect(await prisma.apiKey.count()).toBe(0);
      await prisma.tier.delete({ where: { id: tier.id } });
      expect(await prisma.limit.count()).toBe(0);
    } finally {
      await prisma.$disconnect();
    }
  });
});
