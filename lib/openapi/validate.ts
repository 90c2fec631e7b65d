/**
 * Checks for OpenAPI 3.1 documents without a validator dependency: `openApiProblems` is a strict
 * structural check of the document (the parts Sluice writes and reads: info, paths, operations,
 * parameters, request bodies, responses, headers, components, every local `$ref` resolving);
 * `schemaProblems` checks a value against one of its schemas, for the subset of JSON Schema 2020-12
 * that zod-to-openapi and `sluice openapi` write (type, enum, const, properties, required,
 * additionalProperties, items, anyOf / oneOf / allOf, minimum / maximum, minLength / maxLength,
 * pattern, minItems / maxItems, $ref); a keyword outside that subset is reported, not ignored.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const PATH_ITEM_KEYS = new Set<string>([...METHODS, "summary", "description", "servers", "parameters", "$ref"]);
const OPERATION_KEYS = new Set(["tags", "summary", "description", "externalDocs", "operationId", "parameters", "requestBody", "responses", "callbacks", "deprecated", "security", "servers"]);
const PARAMETER_KEYS = new Set(["name", "in", "description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"]);
const RESPONSE_KEYS = new Set(["description", "headers", "content", "links"]);
const HEADER_KEYS = new Set(["description", "required", "deprecated", "style", "explode", "schema", "example", "examples", "content"]);
const MEDIA_KEYS = new Set(["schema", "example", "examples", "encoding"]);
const COMPONENT_KINDS = new Set(["schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"]);
const TOP_KEYS = new Set(["openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs"]);

/** `#/components/schemas/X` → the object it names, or undefined. */
export function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let at: unknown = doc;
  for (const raw of ref.slice(2).split("/")) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(at) || !Object.hasOwn(at, part)) return undefined;
    at = at[part];
  }
  return at;
}

/** Every structural problem of an OpenAPI 3.1 document, as `path: message` lines (empty: none). */
export function openApiProblems(doc: unknown): string[] {
  const out: string[] = [];
  const bad = (path: string, message: string) => out.push(`${path}: ${message}`);
  const extra = (obj: Json, allowed: Set<string>, path: string) => {
    for (const k of Object.keys(obj)) if (!allowed.has(k) && !k.startsWith("x-")) bad(`${path}.${k}`, "not an OpenAPI 3.1 field here");
  };
  if (!isObject(doc)) return ["(document): expected an object"];
  extra(doc, TOP_KEYS, "");
  if (typeof doc.openapi !== "string" || !/^3\.1\.\d+$/.test(doc.openapi)) bad("openapi", `expected "3.1.x", got ${JSON.stringify(doc.openapi)}`);
  if (!isObject(doc.info)) bad("info", "required object");
  else {
    if (typeof doc.info.title !== "string" || doc.info.title === "") bad("info.title", "required string");
    if (typeof doc.info.version !== "string" || doc.info.version === "") bad("info.version", "required string");
  }
  if (doc.paths === undefined && doc.components === undefined && doc.webhooks === undefined) bad("paths", "one of paths, components or webhooks is required");

  // Every $ref in the document resolves.
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (isObject(v)) {
      if (typeof v.$ref === "string" && v.$ref.startsWith("#") && resolvePointer(doc, v.$ref) === undefined) bad(path, `$ref ${v.$ref} does not resolve`);
      for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
    }
  };
  walk(doc, "");

  const deref = (v: unknown): unknown => (isObject(v) && typeof v.$ref === "string" ? resolvePointer(doc, v.$ref) : v);
  const checkSchemaObject = (v: unknown, path: string) => {
    if (typeof v !== "boolean" && !isObject(v)) bad(path, "expected a schema (object or boolean)");
  };
  const checkContent = (content: unknown, path: string) => {
    if (!isObject(content)) return bad(path, "expected a map of media types");
    for (const [type, media] of Object.entries(content)) {
      if (!/^[\w.+*-]+\/[\w.+*-]+$/.test(type)) bad(`${path}.${type}`, "not a media type");
      if (!isObject(media)) bad(`${path}.${type}`, "expected a media type object");
      else {
        extra(media, MEDIA_KEYS, `${path}.${type}`);
        if (media.schema !== undefined) checkSchemaObject(media.schema, `${path}.${type}.schema`);
      }
    }
  };
  const checkHeaders = (headers: unknown, path: string) => {
    if (!isObject(headers)) return bad(path, "expected a map of headers");
    for (const [name, raw] of Object.entries(headers)) {
      const h = deref(raw);
      if (!isObject(h)) bad(`${path}.${name}`, "expected a header object");
      else {
        extra(h, HEADER_KEYS, `${path}.${name}`);
        if ((h.schema === undefined) === (h.content === undefined)) bad(`${path}.${name}`, "exactly one of schema or content");
      }
    }
  };
  const checkParameters = (params: unknown, path: string, templated: Set<string> | null) => {
    if (!Array.isArray(params)) return bad(path, "expected an array");
    const seen = new Set<string>();
    params.forEach((raw, i) => {
      const p = deref(raw);
      const at = `${path}[${i}]`;
      if (!isObject(p)) return bad(at, "expected a parameter object");
      extra(p, PARAMETER_KEYS, at);
      if (typeof p.name !== "string" || p.name === "") bad(`${at}.name`, "required string");
      if (!["query", "header", "path", "cookie"].includes(p.in as string)) bad(`${at}.in`, "one of query, header, path, cookie");
      if (p.in === "path" && p.required !== true) bad(`${at}.required`, "a path parameter must be required: true");
      if (p.in === "path" && templated && typeof p.name === "string" && !templated.has(p.name)) bad(`${at}.name`, `{${p.name}} is not in the path`);
      if ((p.schema === undefined) === (p.content === undefined)) bad(at, "exactly one of schema or content");
      const id = `${String(p.in)}:${String(p.name)}`;
      if (seen.has(id)) bad(at, `duplicate parameter ${id}`);
      seen.add(id);
    });
  };

  const operationIds = new Set<string>();
  if (doc.paths !== undefined) {
    if (!isObject(doc.paths)) bad("paths", "expected an object");
    else {
      for (const [route, item] of Object.entries(doc.paths)) {
        const at = `paths.${route}`;
        if (!route.startsWith("/")) bad(at, "a path starts with /");
        if (!isObject(item)) {
          bad(at, "expected a path item");
          continue;
        }
        extra(item, PATH_ITEM_KEYS, at);
        const templated = new Set([...route.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!));
        const declared = new Set<string>();
        const collect = (params: unknown) => {
          if (Array.isArray(params)) for (const raw of params) {
            const p = deref(raw);
            if (isObject(p) && p.in === "path" && typeof p.name === "string") declared.add(p.name);
          }
        };
        if (item.parameters !== undefined) {
          checkParameters(item.parameters, `${at}.parameters`, templated);
          collect(item.parameters);
        }
        for (const method of METHODS) {
          const op = item[method];
          if (op === undefined) continue;
          const oat = `${at}.${method}`;
          if (!isObject(op)) {
            bad(oat, "expected an operation");
            continue;
          }
          extra(op, OPERATION_KEYS, oat);
          if (op.operationId !== undefined) {
            if (typeof op.operationId !== "string") bad(`${oat}.operationId`, "expected a string");
            else if (operationIds.has(op.operationId)) bad(`${oat}.operationId`, `duplicate operationId ${op.operationId}`);
            else operationIds.add(op.operationId);
          }
          const opDeclared = new Set(declared);
          if (op.parameters !== undefined) {
            checkParameters(op.parameters, `${oat}.parameters`, templated);
            if (Array.isArray(op.parameters)) for (const raw of op.parameters) {
              const p = deref(raw);
              if (isObject(p) && p.in === "path" && typeof p.name === "string") opDeclared.add(p.name);
            }
          }
          for (const name of templated) if (!opDeclared.has(name)) bad(oat, `path parameter {${name}} is not declared`);
          if (op.requestBody !== undefined) {
            const body = deref(op.requestBody);
            if (!isObject(body) || body.content === undefined) bad(`${oat}.requestBody`, "expected a request body with content");
            else checkContent(body.content, `${oat}.requestBody.content`);
          }
          if (!isObject(op.responses) || Object.keys(op.responses).length === 0) {
            bad(`${oat}.responses`, "at least one response is required");
            continue;
          }
          for (const [code, raw] of Object.entries(op.responses)) {
            const rat = `${oat}.responses.${code}`;
            if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(code)) bad(rat, "a status code, 1XX–5XX or default");
            const r = deref(raw);
            if (!isObject(r)) {
              bad(rat, "expected a response object");
              continue;
            }
            extra(r, RESPONSE_KEYS, rat);
            if (typeof r.description !== "string") bad(`${rat}.description`, "required string");
            if (r.content !== undefined) checkContent(r.content, `${rat}.content`);
            if (r.headers !== undefined) checkHeaders(r.headers, `${rat}.headers`);
          }
        }
      }
    }
  }
  if (doc.components !== undefined) {
    if (!isObject(doc.components)) bad("components", "expected an object");
    else {
      for (const [kind, map] of Object.entries(doc.components)) {
        if (!COMPONENT_KINDS.has(kind) && !kind.startsWith("x-")) bad(`components.${kind}`, "not a component kind");
        else if (!isObject(map)) bad(`components.${kind}`, "expected a map");
        else for (const name of Object.keys(map)) if (!/^[a-zA-Z0-9._-]+$/.test(name)) bad(`components.${kind}.${name}`, "component names match ^[a-zA-Z0-9._-]+$");
      }
      if (isObject(doc.components.schemas)) for (const [name, s] of Object.entries(doc.components.schemas)) checkSchemaObject(s, `components.schemas.${name}`);
    }
  }
  return out;
}

const SCHEMA_KEYWORDS = new Set([
  "type", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf", "oneOf", "allOf",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
  "$ref", "description", "title", "default", "example", "examples", "format", "deprecated", "readOnly", "writeOnly", "propertyNames",
]);

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Why `value` does not conform to `schema` (resolving `$ref`s in `doc`); empty when it does. */
export function schemaProblems(doc: unknown, schema: unknown, value: unknown, path = "$"): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: no value is allowed`];
  if (!isObject(schema)) return [`${path}: the schema is not an object`];
  const out: string[] = [];
  for (const k of Object.keys(schema)) if (!SCHEMA_KEYWORDS.has(k) && !k.startsWith("x-")) out.push(`${path}: schema keyword ${k} is not supported by this check`);
  if (typeof schema.$ref === "string") {
    const target = resolvePointer(doc, schema.$ref);
    if (target === undefined) return [...out, `${path}: $ref ${schema.$ref} does not resolve`];
    out.push(...schemaProblems(doc, target, value, path));
  }
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((x) => x === t || (x === "number" && t === "integer"))) return [...out, `${path}: expected ${types.join(" or ")}, got ${t}`];
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) out.push(`${path}: expected one of ${JSON.stringify(schema.enum)}, got ${JSON.stringify(value)}`);
  if (schema.const !== undefined && schema.const !== value) out.push(`${path}: expected ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) out.push(`${path}: below ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) out.push(`${path}: above ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) out.push(`${path}: not above ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) out.push(`${path}: not below ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && [...value].length < schema.minLength) out.push(`${path}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === "number" && [...value].length > schema.maxLength) out.push(`${path}: longer than ${schema.maxLength}`);
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) out.push(`${path}: does not match ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) out.push(`${path}: fewer than ${schema.minItems} items`);
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) out.push(`${path}: more than ${schema.maxItems} items`);
    if (schema.items !== undefined) value.forEach((item, i) => out.push(...schemaProblems(doc, schema.items, item, `${path}[${i}]`)));
  }
  if (isObject(value)) {
    const props = isObject(schema.properties) ? schema.properties : {};
    if (Array.isArray(schema.required)) for (const k of schema.required as string[]) if (!Object.hasOwn(value, k)) out.push(`${path}.${k}: required`);
    for (const [k, v] of Object.entries(value)) {
      if (Object.hasOwn(props, k)) out.push(...schemaProblems(doc, props[k], v, `${path}.${k}`));
      else if (schema.additionalProperties !== undefined) out.push(...schemaProblems(doc, schema.additionalProperties, v, `${path}.${k}`));
    }
    if (schema.propertyNames !== undefined) for (const k of Object.keys(value)) out.push(...schemaProblems(doc, schema.propertyNames, k, `${path} key ${JSON.stringify(k)}`));
  }
  if (Array.isArray(schema.allOf)) for (const s of schema.allOf) out.push(...schemaProblems(doc, s, value, path));
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((s) => schemaProblems(doc, s, value, path).length === 0)) {
    out.push(`${path}: matches none of anyOf (${schema.anyOf.map((s) => schemaProblems(doc, s, value, path)[0]).join("; ")})`);
  }
  if (Array.isArray(schema.oneOf)) {
    const n = schema.oneOf.filter((s) => schemaProblems(doc, s, value, path).length === 0).length;
    if (n !== 1) out.push(`${path}: matches ${n} of oneOf, expected exactly 1`);
  }
  return out;
}

/** The schema of `response` for an operation's status and media type, or null when not documented. */
export function responseSchema(doc: unknown, route: string, method: string, status: number, mediaType = "application/json"): unknown {
  const op = resolvePointer(doc, `#/paths/${route.replace(/~/g, "~0").replace(/\//g, "~1")}/${method.toLowerCase()}`);
  if (!isObject(op) || !isObject(op.responses)) return null;
  let r = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`] ?? op.responses.default;
  if (isObject(r) && typeof r.$ref === "string") r = resolvePointer(doc, r.$ref);
  if (!isObject(r) || !isObject(r.content)) return null;
  const media = r.content[mediaType];
  return isObject(media) ? (media.schema ?? null) : null;
}
