// The HTTP calls of the client: every one is a call an operator's game client makes.
// Mutating calls carry a fresh Idempotency-Key (a retry of the same click may reuse it).

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body.message || `HTTP ${status}`);
    this.status = status;
    this.code = body.code || "http-error";
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

export class Api {
  constructor(token) {
    this.token = token;
  }

  async call(method, path, body) {
    const headers = { Authorization: `Bearer ${this.token}` };
    if (method !== "GET") {
      headers["Idempotency-Key"] = crypto.randomUUID();
    }
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const data = text ? JSON.parse(text) : {};
    if (!response.ok) {
      throw new ApiError(response.status, data, response.headers.get("Retry-After"));
    }
    return data;
  }

  get(path) {
    return this.call("GET", path);
  }

  post(path, body) {
    return this.call("POST", path, body);
  }
}

// A refusal as the player reads it: the server's message and its stable code.
export function explain(error) {
  if (error instanceof ApiError) {
    const wait = error.retryAfter ? ` (retry in ${error.retryAfter} s)` : "";
    return `${error.message}${wait} [${error.code}]`;
  }
  return String(error && error.message ? error.message : error);
}
