package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.handler.codec.http.HttpResponseStatus;

/** Errors in OpenAI's shape: {@code {"error": {"message", "type", "param", "code"}}}. */
final class OpenAiErrors {
    private OpenAiErrors() {
    }

    /** An error to answer with; thrown inside request handling and turned into a response at its edge. */
    static final class ApiError extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final HttpResponseStatus status;
        final String type;
        final String code;
        /** For a 405: the methods the resource takes, sent as {@code Allow}; else null. */
        final String allow;

        ApiError(HttpResponseStatus status, String type, String code, String message) {
            this(status, type, code, message, null);
        }

        ApiError(HttpResponseStatus status, String type, String code, String message, String allow) {
            super(message, null, false, false);
            this.status = status;
            this.type = type;
            this.code = code;
            this.allow = allow;
        }
    }

    static ApiError badRequest(String message) {
        return new ApiError(HttpResponseStatus.BAD_REQUEST, "invalid_request_error", null, message);
    }

    static ApiError notFound(String code, String message) {
        return new ApiError(HttpResponseStatus.NOT_FOUND, "invalid_request_error", code, message);
    }

    static ObjectNode body(ObjectMapper json, ApiError e) {
        ObjectNode root = json.createObjectNode();
        ObjectNode error = root.putObject("error");
        error.put("message", e.getMessage());
        error.put("type", e.type);
        error.putNull("param");
        if (e.code == null) {
            error.putNull("code");
        } else {
            error.put("code", e.code);
        }
        return root;
    }
}
