// Checking edited tool arguments against the tool's JSON schema (the parts that catch real
// mistakes: JSON syntax, an object, required keys, unknown keys, the type of each value).

const TYPES = {
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  null: (v) => v === null,
};

function typesOf(schema) {
  if (!schema) return [];
  if (schema.type) return [].concat(schema.type);
  const options = schema.anyOf || schema.oneOf;
  return options ? options.flatMap(typesOf) : [];
}

/** Parse `text` as the arguments of a call; {args} or {error: "what is wrong"}. */
export function checkArgs(text, schema) {
  let args;
  try {
    args = JSON.parse(text);
  } catch (exc) {
    return { error: `not valid JSON: ${exc.message}` };
  }
  if (!TYPES.object(args)) return { error: "the arguments must be a JSON object ({...})" };
  if (!schema) return { args };
  const properties = schema.properties || {};
  for (const key of schema.required || []) {
    if (!(key in args)) return { error: `missing required argument "${key}"` };
  }
  for (const [key, value] of Object.entries(args)) {
    const property = properties[key];
    if (!property) {
      if (schema.additionalProperties === false || Object.keys(properties).length) {
        return { error: `unknown argument "${key}"; expected one of: ${Object.keys(properties).join(", ")}` };
      }
      continue;
    }
    const types = typesOf(property);
    if (types.length && !types.some((t) => TYPES[t] && TYPES[t](value))) {
      return { error: `"${key}" must be ${types.join(" or ")}` };
    }
  }
  return { args };
}

/** One line per argument: `name (type, required): description`. */
export function describeSchema(schema) {
  if (!schema || !schema.properties) return [];
  const required = new Set(schema.required || []);
  return Object.entries(schema.properties).map(([key, property]) => {
    const types = typesOf(property).join(" | ") || "any";
    const flags = required.has(key) ? `${types}, required` : types;
    return { key, flags, description: property.description || "" };
  });
}

/** Wire an argument editor: `area` (the JSON text) is checked against `schema` as it is typed,
 * `problem` says what is wrong, `save` is disabled meanwhile and, clicked, gives `submit` the
 * checked arguments. The chat's approval cards and the editor's try panel share it. */
export function bindArgumentCheck(area, problem, save, schema, submit) {
  const check = () => {
    const { error } = checkArgs(area.value, schema);
    problem.textContent = error || "";
    save.disabled = Boolean(error);
    area.setAttribute("aria-invalid", error ? "true" : "false");
    return !error;
  };
  area.addEventListener("input", check);
  save.addEventListener("click", () => {
    if (check()) submit(checkArgs(area.value, schema).args);
  });
}
