;;; kiln-jsonrpc-test.el --- kiln from Emacs's built-in jsonrpc.el  -*- lexical-binding: t -*-

;; A client that was not written for kiln, Emacs's jsonrpc.el, must get
;; spec-exact answers.  This file evaluates the client code shown in
;; docs/editors.md ("Without the package: jsonrpc.el" section, its first
;; elisp block) and drives a
;; fresh kiln ($KILN_BIN, else build/asan/kiln) per test through it.
;; Run by tests/suites/65-emacs.sh:
;;   emacs --batch -Q -l ert -l tests/emacs/kiln-jsonrpc-test.el \
;;         -f ert-run-tests-batch-and-exit
;; Every wait is bounded; no test asserts how long anything took.

(require 'ert)
(require 'seq)
(require 'jsonrpc)

(defconst kiln-test--root
  (expand-file-name "../.." (file-name-directory
                             (or load-file-name buffer-file-name)))
  "The repository's top directory.")

(defun kiln-test--doc-client ()
  "Return the first elisp block of docs/editors.md's jsonrpc.el section."
  (with-temp-buffer
    (insert-file-contents (expand-file-name "docs/editors.md" kiln-test--root))
    (goto-char (point-min))
    (unless (re-search-forward "^### Without the package: jsonrpc.el" nil t)
      (error "docs/editors.md has no \"### Without the package: jsonrpc.el\" section"))
    (let ((start (and (re-search-forward "^```elisp\n" nil t) (point))))
      (unless (and start (re-search-forward "^```$" nil t))
        (error "the jsonrpc.el section of docs/editors.md has no elisp block"))
      (buffer-substring-no-properties start (match-beginning 0)))))

;; The documented client is what the tests use: load it once, with
;; dynamic binding, as in an init file without lexical-binding (code
;; that works so works with lexical binding too).
(with-temp-buffer
  (insert (kiln-test--doc-client))
  (goto-char (point-min))
  (condition-case nil
      (while t (eval (read (current-buffer)) nil))
    (end-of-file nil)))

(defvar my-kiln-program)                   ; defined by the block above
(setq my-kiln-program
      (let ((bin (getenv "KILN_BIN")))
        (if (and bin (not (equal bin "")))
            (expand-file-name bin)
          (expand-file-name "build/asan/kiln" kiln-test--root))))

(defvar kiln-test--timeout 60
  "Seconds any one wait may last before the test fails.")

;;; Helpers

(defun kiln-test--wait (what pred &optional timeout)
  "Process output until PRED returns non-nil; fail naming WHAT after TIMEOUT."
  (let ((deadline (+ (float-time) (or timeout kiln-test--timeout))))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall pred)
        (ert-fail (format "timed out waiting for %s" what)))))

(defun kiln-test--process (conn)
  "The Emacs process object of CONN."
  (jsonrpc--process conn))

(defun kiln-test--close (conn)
  "End CONN's kiln: close its stdin, wait a while, then kill it."
  (let ((proc (kiln-test--process conn))
        (deadline (+ (float-time) 10)))
    (when (process-live-p proc)
      (ignore-errors (process-send-eof proc))
      (while (and (process-live-p proc) (< (float-time) deadline))
        (accept-process-output nil 0.05))
      (when (process-live-p proc)
        (delete-process proc)))))

(defun kiln-test--tap (conn)
  "Record every byte kiln writes on CONN; return a function giving them.
jsonrpc.el is lenient (it ignores the \"jsonrpc\" member, extra headers
and members); the record lets `kiln-test--check-wire' be strict."
  (let ((raw nil)
        (proc (kiln-test--process conn)))
    (add-function :before (process-filter proc)
                  (lambda (_proc string) (push string raw)))
    (lambda () (apply #'concat (reverse raw)))))

(defun kiln-test--frames (raw)
  "Split RAW, kiln's whole output, into JSON texts; fail on bad framing."
  (let ((bytes (encode-coding-string raw 'utf-8 t))
        (pos 0)
        (frames nil))
    (while (< pos (length bytes))
      (unless (eq (string-match
                   "Content-Length: \\([0-9]+\\)\r\n\\(?:Content-Type: [^\r\n]*\r\n\\)?\r\n"
                   bytes pos)
                  pos)
        (ert-fail (list "bad header" (substring bytes pos (min (length bytes)
                                                               (+ pos 80))))))
      (let* ((len (string-to-number (match-string 1 bytes)))
             (start (match-end 0))
             (end (+ start len)))
        (when (> end (length bytes))
          (ert-fail (list "frame shorter than its Content-Length" len)))
        (push (decode-coding-string (substring bytes start end) 'utf-8 t)
              frames)
        (setq pos end)))
    (nreverse frames)))

(defun kiln-test--check-wire (raw)
  "Every message in RAW is exactly a JSON-RPC 2.0 response or notification."
  (dolist (text (kiln-test--frames raw))
    (let* ((msg (json-parse-string text :object-type 'alist
                                   :null-object :null :false-object :false))
           (keys (mapcar #'car msg)))
      (should (equal (alist-get 'jsonrpc msg) "2.0"))
      (dolist (k keys)
        (should (memq k '(jsonrpc id method params result error))))
      (cond
       ((assq 'method msg)
        ;; kiln sends notifications only, never requests.
        (should (stringp (alist-get 'method msg)))
        (should-not (assq 'id msg))
        (should-not (assq 'result msg))
        (should-not (assq 'error msg))
        (when (assq 'params msg)
          (should (or (consp (alist-get 'params msg))
                      (vectorp (alist-get 'params msg))))))
       (t
        ;; A response: an id, and exactly one of result and error.
        (should (assq 'id msg))
        (should (or (integerp (alist-get 'id msg))
                    (stringp (alist-get 'id msg))
                    (eq (alist-get 'id msg) :null)))
        (should (xor (assq 'result msg) (assq 'error msg)))
        (when (assq 'error msg)
          (let ((err (alist-get 'error msg)))
            (should (integerp (alist-get 'code err)))
            (should (stringp (alist-get 'message err)))
            (dolist (k (mapcar #'car err))
              (should (memq k '(code message data)))))))))))

(defmacro kiln-test--with-kiln (spec &rest body)
  "Run BODY with (CONN NOTES [RAW]) bound to a fresh kiln and its output.
NOTES is a function returning the notifications so far, oldest first,
each (METHOD . PARAMS); RAW one returning all kiln wrote.  After BODY,
everything kiln wrote must be spec-exact JSON-RPC 2.0.  Then kiln's
stdin is closed so that it ends its work itself; it is killed only if
it has not exited in time."
  (declare (indent 1))
  (let ((conn (car spec)) (notes (cadr spec))
        (log (make-symbol "log")) (raw (or (nth 2 spec) (make-symbol "raw"))))
    `(let* ((,log nil)
            (,conn (my-kiln-start (lambda (method params)
                                 (push (cons method params) ,log))))
            (,raw (kiln-test--tap ,conn))
            (,notes (lambda () (reverse ,log))))
       (ignore ,notes ,raw)
       (unwind-protect
           (progn ,@body
                  (kiln-test--check-wire (funcall ,raw)))
         (kiln-test--close ,conn)))))

(defun kiln-test--error-code (err)
  "The JSON-RPC error code in the data of a `jsonrpc-error' ERR."
  (alist-get 'jsonrpc-error-code (cdr err)))

(defun kiln-test--error-message (err)
  "The JSON-RPC error message in the data of a `jsonrpc-error' ERR."
  (alist-get 'jsonrpc-error-message (cdr err)))

(defun kiln-test--proc-stat (pid)
  "PID's (PPID STATE STARTTIME) from /proc, or nil when it is gone."
  (let ((file (format "/proc/%d/stat" pid)))
    (ignore-errors
      (with-temp-buffer
        (insert-file-contents file)
        ;; The command name may hold spaces and parentheses: fields
        ;; start after its last ')'.
        (goto-char (point-max))
        (search-backward ")")
        (let ((fields (split-string (buffer-substring (+ 2 (point))
                                                      (point-max)))))
          (list (string-to-number (nth 1 fields))
                (nth 0 fields)
                (nth 19 fields)))))))

(defun kiln-test--descendants (pid)
  "Every live process under PID, as (PID . STARTTIME), children first."
  (let ((all (delq nil
                   (mapcar (lambda (name)
                             (let* ((p (string-to-number name))
                                    (st (kiln-test--proc-stat p)))
                               (and st (list p (nth 0 st) (nth 2 st)))))
                           (directory-files "/proc" nil "\\`[0-9]+\\'"))))
        (found nil)
        (frontier (list pid)))
    (while frontier
      (let ((parent (pop frontier)))
        (dolist (p all)
          (when (= (nth 1 p) parent)
            (push (cons (nth 0 p) (nth 2 p)) found)
            (push (nth 0 p) frontier)))))
    (nreverse found)))

(defun kiln-test--running-p (entry)
  "Non-nil when ENTRY (PID . STARTTIME) still runs (alive, not a zombie)."
  (let ((st (kiln-test--proc-stat (car entry))))
    (and st (equal (nth 2 st) (cdr entry)) (not (equal (nth 1 st) "Z")))))

(defun kiln-test--wait-exit (conn)
  "Wait until CONN's process has exited; return its exit code."
  (let ((proc (kiln-test--process conn)))
    (kiln-test--wait "kiln to exit" (lambda () (not (process-live-p proc))))
    (should (eq (process-status proc) 'exit))
    (process-exit-status proc)))

;;; Tests

(ert-deftest kiln-jsonrpc-initialize ()
  "initialize with null params: kiln, UTF-16; utf-8 offered first is taken."
  (kiln-test--with-kiln (conn notes)
    ;; my-kiln-initialize without encodings sends "params": null.
    (let ((result (my-kiln-initialize conn)))
      (should (equal (plist-get (plist-get result :serverInfo) :name) "kiln"))
      (should (stringp (plist-get (plist-get result :serverInfo) :version)))
      (should (equal (plist-get (plist-get result :capabilities) :positionEncoding)
                     "utf-16"))
      (should (seq-contains-p (plist-get (plist-get (plist-get result :capabilities)
                                                    :experimental)
                                         :methods)
                              "snippet/run"))))
  (kiln-test--with-kiln (conn notes)
    (let ((result (my-kiln-initialize conn ["utf-8" "utf-16"])))
      (should (equal (plist-get (plist-get result :capabilities) :positionEncoding)
                     "utf-8"))))
  (kiln-test--with-kiln (conn notes)
    ;; Offered but not first: the client's preference wins.
    (let ((result (my-kiln-initialize conn ["utf-16" "utf-8"])))
      (should (equal (plist-get (plist-get result :capabilities) :positionEncoding)
                     "utf-16")))))

(ert-deftest kiln-jsonrpc-before-initialize ()
  "A request before initialize is a jsonrpc-error with code -32002."
  (kiln-test--with-kiln (conn notes)
    (let ((err (should-error (my-kiln-validate conn "python" "x = 1\n")
                             :type 'jsonrpc-error)))
      (should (equal (kiln-test--error-code err) -32002))
      (should (stringp (kiln-test--error-message err))))
    ;; With null params too.
    (let ((err (should-error (jsonrpc-request conn :shutdown nil :timeout 30)
                             :type 'jsonrpc-error)))
      (should (equal (kiln-test--error-code err) -32002)))
    ;; The session is still usable: initialize works afterwards.
    (should (equal (plist-get (plist-get (my-kiln-initialize conn) :serverInfo) :name)
                   "kiln"))))

(ert-deftest kiln-jsonrpc-unknown-method ()
  "An unknown method is a jsonrpc-error with code -32601."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (let ((err (should-error (jsonrpc-request conn :kiln/noSuchMethod nil
                                              :timeout 30)
                             :type 'jsonrpc-error)))
      (should (equal (kiln-test--error-code err) -32601)))
    (let ((err (should-error (jsonrpc-request conn :noSuchMethod '(:a 1)
                                              :timeout 30)
                             :type 'jsonrpc-error)))
      (should (equal (kiln-test--error-code err) -32601)))))

(defconst kiln-test--bad-python "x = 1\nprint(\"😀é\") )\n"
  "A syntax error (the last `)') after an emoji and an accented letter.
Before that `)': 13 UTF-16 code units, 16 UTF-8 bytes.")

(defconst kiln-test--os-python "import os\nx = \"😀é\"; os.system(\"ls\")\n"
  "A policy finding (`os.system') after an emoji and an accented letter.
`os.system' spans UTF-16 units 11 to 20, UTF-8 bytes 14 to 23.")

(defun kiln-test--check-rule-diag (result start end)
  "RESULT denies with one PY-OS-PROCESS diagnostic on line 1, START to END."
  (should (equal (plist-get result :verdict) "deny"))
  (let* ((diags (plist-get result :diagnostics))
         (d (and (vectorp diags) (= (length diags) 1) (aref diags 0))))
    (should d)
    (should (equal (plist-get d :code) "PY-OS-PROCESS"))
    (should (equal (plist-get (plist-get d :range) :start)
                   (list :line 1 :character start)))
    (should (equal (plist-get (plist-get d :range) :end)
                   (list :line 1 :character end)))))

(defun kiln-test--check-syntax-diag (result start end)
  "RESULT denies with one syntax diagnostic on line 1 from START to END."
  (should (equal (plist-get result :verdict) "deny"))
  (let ((diags (plist-get result :diagnostics)))
    (should (vectorp diags))
    (should (= (length diags) 1))
    (let* ((d (aref diags 0))
           (range (plist-get d :range)))
      (should (equal (plist-get d :code) "syntax"))
      (should (equal (plist-get d :severity) 1))
      (should (equal (plist-get d :source) "kiln"))
      (should (equal (plist-get range :start) (list :line 1 :character start)))
      (should (equal (plist-get range :end) (list :line 1 :character end))))))

(ert-deftest kiln-jsonrpc-validate-utf16 ()
  "A syntax error after non-ASCII text is placed in UTF-16 code units."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (kiln-test--check-syntax-diag
     (my-kiln-validate conn "python" kiln-test--bad-python) 13 14)
    (kiln-test--check-rule-diag
     (my-kiln-validate conn "python" kiln-test--os-python) 11 20)
    (should (equal (plist-get (my-kiln-validate conn "python" "print('ok')\n") :verdict)
                   "allow"))))

(ert-deftest kiln-jsonrpc-validate-utf8 ()
  "With utf-8 negotiated, the same error is placed in UTF-8 bytes."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn ["utf-8" "utf-16"])
    (kiln-test--check-syntax-diag
     (my-kiln-validate conn "python" kiln-test--bad-python) 16 17)
    (kiln-test--check-rule-diag
     (my-kiln-validate conn "python" kiln-test--os-python) 14 23)))

(ert-deftest kiln-jsonrpc-run-output ()
  "snippet/run streams run/output to the handler, then answers exitCode 0."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (let* ((result (my-kiln-run conn "python" "print(\"hi\")"))
           ;; Notifications that came before the answer.
           (outputs (seq-filter (lambda (n) (eq (car n) 'run/output))
                                (funcall notes)))
           (run-id (plist-get result :runId)))
      (should (stringp run-id))
      (should (equal (plist-get result :exitCode) 0))
      (should (null (plist-get result :signal)))
      (should (eq (plist-get result :timedOut) :json-false))
      (should outputs)
      (dolist (n outputs)
        (should (equal (plist-get (cdr n) :runId) run-id))
        (should (equal (plist-get (cdr n) :stream) "stdout")))
      (should (equal (mapconcat (lambda (n) (plist-get (cdr n) :text)) outputs "")
                     "hi\n")))))

(ert-deftest kiln-jsonrpc-cancel-run ()
  "$/cancelRequest of a running snippet/run ends it with -32800."
  (kiln-test--with-kiln (conn notes raw)
    (my-kiln-initialize conn)
    (let* ((result nil) (error-obj nil)
           (id (my-kiln-run-async
                conn "python"
                "import time\nprint('started', flush=True)\ntime.sleep(30)\n"
                (lambda (r) (setq result (list r)))
                (lambda (e) (setq error-obj e)))))
      (should (integerp id))
      ;; Cancel once the program runs, so the cancel kills a live box.
      (kiln-test--wait "the run's first output"
                       (lambda ()
                         (seq-find (lambda (n) (and (eq (car n) 'run/output)
                                                    (string-match-p
                                                     "started"
                                                     (plist-get (cdr n) :text))))
                                   (funcall notes))))
      (my-kiln-cancel conn id)
      ;; Generous: the program itself would sleep 30 seconds.
      (kiln-test--wait "the cancelled run's answer"
                       (lambda () (or result error-obj)) 25)
      (should-not result)
      (should (equal (plist-get error-obj :code) -32800))
      ;; The server is still there and answers.
      (should (equal (plist-get (my-kiln-validate conn "python" "x = 1\n") :verdict)
                     "allow"))
      ;; The answer is the last word on the run: no run/output after it.
      (let* ((frames (mapcar (lambda (text)
                               (json-parse-string text :object-type 'plist))
                             (kiln-test--frames (funcall raw))))
             (answer (seq-position frames id
                                   (lambda (f i) (equal (plist-get f :id) i)))))
        (should answer)
        (should-not (seq-find (lambda (f)
                                (equal (plist-get f :method) "run/output"))
                              (nthcdr answer frames)))))))

(ert-deftest kiln-jsonrpc-shutdown-exit ()
  "shutdown answers null, then exit ends kiln with 0; exit alone with 1."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (should (null (jsonrpc-request conn :shutdown nil :timeout 30)))
    ;; After shutdown, requests are refused with -32600.
    (let ((err (should-error (my-kiln-validate conn "python" "x = 1\n")
                             :type 'jsonrpc-error)))
      (should (equal (kiln-test--error-code err) -32600)))
    (jsonrpc-notify conn :exit nil)
    (should (equal (kiln-test--wait-exit conn) 0)))
  ;; The documented helper does the same.
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (my-kiln-stop conn)
    (should (equal (kiln-test--wait-exit conn) 0)))
  ;; exit without shutdown: code 1, as the LSP says.
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (jsonrpc-notify conn :exit nil)
    (should (equal (kiln-test--wait-exit conn) 1))))

(ert-deftest kiln-jsonrpc-close-without-shutdown ()
  "Closing kiln's stdin mid-run: exit code 1 and no process of kiln's left."
  (kiln-test--with-kiln (conn notes)
    (my-kiln-initialize conn)
    (let* ((proc (kiln-test--process conn))
           (pid (process-id proc))
           (died nil)
           (children nil))
      (my-kiln-run-async conn "python"
                      "import time\nprint('started', flush=True)\ntime.sleep(30)\n"
                      #'ignore (lambda (e) (setq died e)))
      (kiln-test--wait "the run's first output"
                       (lambda ()
                         (seq-find (lambda (n) (eq (car n) 'run/output))
                                   (funcall notes))))
      (setq children (kiln-test--descendants pid))
      ;; At least the sandboxed program runs under kiln now.
      (should children)
      (process-send-eof proc)
      (should (equal (kiln-test--wait-exit conn) 1))
      ;; jsonrpc.el ends what was in flight itself when the process dies.
      (should died)
      (kiln-test--wait "kiln's processes to end"
                       (lambda () (not (seq-some #'kiln-test--running-p children)))
                       20))))

(provide 'kiln-jsonrpc-test)
;;; kiln-jsonrpc-test.el ends here
